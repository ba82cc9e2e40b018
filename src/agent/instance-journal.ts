// The agent's own log of each instance: what it did with it (pulls, starts, stops, reboots,
// failures, SSH key lookups that failed), as opposed to what the container printed. A client reads
// it with `request_logs` and `daemon_logs: true`. It is kept in memory, the last lines of each of
// the most recent instances; an agent restart starts it afresh.
import type { AgentLog } from './agent-log.js';

const LINES_PER_INSTANCE = 1000;
const INSTANCES = 2000;

export class InstanceJournal {
  private readonly lines = new Map<number, string[]>();

  constructor(private readonly now: () => Date = () => new Date()) {}

  /** Records a line about instance `id`, stamped with the time and level. */
  record(id: number, level: 'info' | 'warn' | 'error', msg: string): void {
    let buf = this.lines.get(id);
    if (buf)
      this.lines.delete(id); // re-inserted last: the map's order is least recently written first
    else {
      buf = [];
      if (this.lines.size >= INSTANCES) this.lines.delete(this.lines.keys().next().value!);
    }
    buf.push(`${this.now().toISOString()} ${level.toUpperCase()} ${msg}`);
    if (buf.length > LINES_PER_INSTANCE) buf.splice(0, buf.length - LINES_PER_INSTANCE);
    this.lines.set(id, buf);
  }

  /** The instance's lines, the last `tail` of them when given, newline-terminated. */
  text(id: number, tail: number | null): string {
    const buf = this.lines.get(id) ?? [];
    const shown = tail === null ? buf : tail === 0 ? [] : buf.slice(-tail);
    return shown.map((l) => `${l}\n`).join('');
  }

  /**
   * A log that writes through to `log` and records every line that begins `instance N` (the
   * form all of the agent's lines about one instance take) into that instance's journal.
   */
  wrap(log: AgentLog): AgentLog {
    const tee = (level: 'info' | 'warn' | 'error') => (msg: string) => {
      log[level](msg);
      const m = /^instance (\d+)\b/.exec(msg);
      if (m) this.record(Number(m[1]), level, msg);
    };
    return { info: tee('info'), warn: tee('warn'), error: tee('error') };
  }
}
