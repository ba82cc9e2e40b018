// The billing meter loop: every OPENRIG_METER_INTERVAL_MS, settle live instances (compute per
// second while running, disk always) and stop the instances of users whose balance ran out.
// Safe with several `serve` processes: each charge is a conditional update on billed_until.
import type { Deps } from '../deps.types.js';
import { runMeter } from '../modules/billing/billing.service.js';
import { runVolumeMeter } from '../modules/volumes/volumes.billing.js';
import { every, type Job } from './every.js';

export function startBillingMeter(deps: Deps, onError: (err: unknown) => void): Job {
  return every(
    'billing-meter',
    deps.config.billing.meterIntervalMs,
    async () => {
      const r = await runMeter(deps);
      if (r.stopped.length > 0) deps.log.info({ stopped: r.stopped }, 'instances stopped: balance exhausted');
      // Volumes: charged hourly; an owner out of credit is e-mailed, the volume kept.
      const v = await runVolumeMeter(deps);
      if (v.unpaid.length > 0) deps.log.info({ volumes: v.unpaid }, 'volumes kept unpaid: owners e-mailed');
    },
    onError,
  );
}
