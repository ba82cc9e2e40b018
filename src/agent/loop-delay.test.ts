// The agent's event-loop delay metric: a task holding the loop shows in the next report (at warn
// level from a second on), and each report starts the measurement afresh.
import { describe, expect, it } from 'vitest';
import { LoopDelayWatch } from './loop-delay.js';

const block = (ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* holding the event loop */
  }
};
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('LoopDelayWatch', () => {
  it('reports how long the loop was held, then starts afresh', async () => {
    const lines: { level: string; obj: { event_loop_delay_ms: { max: number } }; msg: string }[] = [];
    const w = new LoopDelayWatch({
      info: (obj, msg) => lines.push({ level: 'info', obj: obj as never, msg }),
      warn: (obj, msg) => lines.push({ level: 'warn', obj: obj as never, msg }),
    }).start(3_600_000);
    try {
      await tick(50);
      block(300);
      await tick(50);
      const held = w.report();
      expect(held.max).toBeGreaterThanOrEqual(250);
      expect(held.p99).toBeGreaterThanOrEqual(held.p50);
      expect(lines.at(-1)).toMatchObject({ level: 'info', msg: 'event loop delay' });
      await tick(100);
      expect(w.report().max).toBeLessThan(250);
      await tick(30);
      block(1100);
      await tick(30);
      expect(w.report().max).toBeGreaterThanOrEqual(1000);
      expect(lines.at(-1)!.level).toBe('warn');
    } finally {
      w.stop();
    }
  });

  it('measures the span since the last sync apart from the minute report, and logs nothing for it', async () => {
    const lines: string[] = [];
    const w = new LoopDelayWatch({ info: (_o, m) => lines.push(m), warn: (_o, m) => lines.push(m) }).start(
      3_600_000,
    );
    try {
      await tick(50);
      block(300);
      await tick(50);
      // The minute report takes its own measurement: the sync still sees the held loop.
      expect(w.report().max).toBeGreaterThanOrEqual(250);
      const logged = lines.length;
      expect(w.forSync().max).toBeGreaterThanOrEqual(250);
      expect(lines).toHaveLength(logged);
      await tick(100);
      expect(w.forSync().max).toBeLessThan(250);
    } finally {
      w.stop();
    }
  });
});
