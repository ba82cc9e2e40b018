// The official CLI's scheduled-job requests, as it sends them: the `--schedule` forms of reboot
// instance, execute and change bid (POST /commands/schedule_job/, a 422 with scheduled_job_id for
// a second one, then the PUT the CLI sends to replace it), show scheduled-jobs (the fields of its
// table) and delete scheduled-job (docs/compatibility.md).
import { beforeAll, expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { offers, renter, runningInstance } from '../helpers/market.js';
import { cli, expectOk, expectTableFields, f } from './official-cli.js';

/** add_scheduled_job's body: times as Python floats (time.mktime), "*" as null. */
function scheduleBody(
  endpoint: string,
  requestBody: Record<string, unknown>,
  instance: number,
  cadence: { frequency: string; day: number | null; hour: number | null },
) {
  const start = Math.floor(Date.now() / 86_400_000) * 86_400;
  return {
    start_time: f(start),
    end_time: f(start + 7 * 86_400),
    api_endpoint: endpoint,
    request_method: 'PUT',
    request_body: requestBody,
    day_of_the_week: cadence.day,
    hour_of_the_day: cadence.hour,
    frequency: cadence.frequency,
    instance_id: instance,
  };
}

describeEachDb('official CLI: scheduled jobs', (dialect) => {
  const t = useTestApp(dialect);
  let key: string;
  let inst: number;
  beforeAll(async () => {
    const u = await renter(t());
    key = u.apiKey;
    const [m] = await offers(t(), 1);
    inst = await runningInstance(t(), key, m!);
  });

  it('reboot instance --schedule HOURLY, a second is 422 with scheduled_job_id, and the PUT replaces it', async () => {
    const body = scheduleBody(`/api/v0/instances/reboot/${inst}/`, { instance_id: inst }, inst, {
      frequency: 'HOURLY',
      day: null,
      hour: null,
    });
    const r = await cli(t(), { method: 'POST', path: '/commands/schedule_job/', key, json: body });
    expect(r.status, r.text).toBe(200);
    const again = await cli(t(), { method: 'POST', path: '/commands/schedule_job/', key, json: body });
    expect(again.status, again.text).toBe(422);
    const id = again.body.scheduled_job_id as number;
    expect(id).toBe(r.body.scheduled_job_id);
    const daily = { ...body, frequency: 'DAILY', hour_of_the_day: 16 };
    const put = await cli(t(), { method: 'PUT', path: `/commands/schedule_job/${id}/`, key, json: daily });
    expect(put.status, put.text).toBe(200);
    expect(put.contentType).toBe('application/json');
  });

  it('execute --schedule DAILY and change bid --schedule WEEKLY', async () => {
    const exec = scheduleBody(
      `/api/v0/instances/command/${inst}/`,
      { command: 'du -d2 -h', instance_id: inst },
      inst,
      {
        frequency: 'DAILY',
        day: null,
        hour: 3,
      },
    );
    expectOk(await cli(t(), { method: 'POST', path: '/commands/schedule_job/', key, json: exec }));
    const bid = scheduleBody(
      `/api/v0/instances/bid_price/${inst}/`,
      { client_id: 'me', price: f(0.4), instance_id: inst },
      inst,
      { frequency: 'WEEKLY', day: 0, hour: 0 },
    );
    const r = await cli(t(), { method: 'POST', path: '/commands/schedule_job/', key, json: bid });
    expect(r.status, r.text).toBe(200);
  });

  it('cloud copy --schedule is refused with a message the CLI prints', async () => {
    const body = {
      ...scheduleBody('/api/v0/commands/rclone/', { src: '/w', dst: '/b', instance_id: String(inst) }, inst, {
        frequency: 'HOURLY',
        day: null,
        hour: null,
      }),
      request_method: 'POST',
      instance_id: String(inst),
    };
    const r = await cli(t(), { method: 'POST', path: '/commands/schedule_job/', key, json: body });
    expect(r.status).toBe(400);
    expect(r.body.msg).toContain('cloud copy cannot be scheduled');
  });

  it('show scheduled-jobs: a bare array with every column of its table; delete scheduled-job', async () => {
    const r = await cli(t(), { method: 'GET', path: '/commands/schedule_job/', key });
    expect(r.status, r.text).toBe(200);
    expect(Array.isArray(r.body)).toBe(true);
    expect(r.body).toHaveLength(3);
    for (const row of r.body) {
      expectTableFields(row, {
        id: 'int',
        instance_id: 'int',
        api_endpoint: 'str',
        start_time: 'num',
        end_time: 'num',
        min_of_the_hour: 'int',
        frequency: 'str',
      });
      // normalize_schedule_fields: null, or an index into its weekday and hour lists.
      if (row.day_of_the_week !== null) expect(row.day_of_the_week).toBeGreaterThanOrEqual(0);
      if (row.hour_of_the_day !== null) expect(row.hour_of_the_day).toBeLessThanOrEqual(23);
    }
    const reboot = r.body.find((j: { api_endpoint: string }) => j.api_endpoint.includes('/reboot/'));
    expect(reboot).toMatchObject({ frequency: 'DAILY', hour_of_the_day: 16, day_of_the_week: null });
    const del = await cli(t(), {
      method: 'DELETE',
      path: `/commands/schedule_job/${reboot.id}/`,
      key,
      json: {},
    });
    expect(del.status, del.text).toBe(200);
    expect(del.body.success).toBe(true);
    const after = await cli(t(), { method: 'GET', path: '/commands/schedule_job/', key });
    expect(after.body).toHaveLength(2);
  });
});
