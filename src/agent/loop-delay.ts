// The agent's event-loop delay as a metric: everything the agent does for every renter (SSH
// sessions, copies, logs, the heartbeat) runs on one event loop, so how late it runs is how late
// everything is. Measured with perf_hooks and logged once a minute as a structured line
// (`event_loop_delay_ms` with p50, p99 and max over that minute), at warn level when some task
// held the loop for a second or more.
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export interface LoopDelayLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A delay this long (ms) or longer is logged at warn level. */
export const LOOP_DELAY_WARN_MS = 1000;

export interface LoopDelayReport {
  p50: number;
  p99: number;
  max: number;
}

export class LoopDelayWatch {
  private readonly h: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  /** The same measurement over the span since the last sync, sent to the server with it. */
  private readonly sinceSync: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly log: LoopDelayLog) {}

  /** Starts measuring; reports every `everyMs` (the timer does not keep the process alive). */
  start(everyMs = 60_000): this {
    this.h.enable();
    this.sinceSync.enable();
    this.timer = setInterval(() => this.report(), everyMs);
    this.timer.unref();
    return this;
  }

  /** The delays (ms) since the last report, logged, and the measurement started afresh. */
  report(): LoopDelayReport {
    const r = summary(this.h);
    if (r.max >= LOOP_DELAY_WARN_MS)
      this.log.warn({ event_loop_delay_ms: r }, 'the event loop was held up: every renter waited');
    else this.log.info({ event_loop_delay_ms: r }, 'event loop delay');
    return r;
  }

  /** The delays (ms) since the previous call, for the sync that carries them to the server. */
  forSync(): LoopDelayReport {
    return summary(this.sinceSync);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.h.disable();
    this.sinceSync.disable();
  }
}

/** p50, p99 and max of `h` in milliseconds (one decimal), then `h` started afresh. */
function summary(h: IntervalHistogram): LoopDelayReport {
  const ms = (ns: number) => Math.round(ns / 1e5) / 10;
  const r =
    h.count > 0
      ? { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) }
      : { p50: 0, p99: 0, max: 0 };
  h.reset();
  return r;
}
