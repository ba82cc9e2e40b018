import { describe, expect, it } from 'vitest';
import { decideAction, planReconcile, type LocalState, type ReconcileItem } from './reconcile.js';

const LOCAL: LocalState[] = ['absent', 'stopped', 'starting', 'running', 'exited'];
const SERVER = [null, 'loading', 'running', 'exited', 'unknown', 'offline', 'stopped'];

describe('agent reconcile', () => {
  it('destroyed: removes anything that is here', () => {
    for (const l of LOCAL)
      for (const s of SERVER)
        expect(decideAction(l, false, 'destroyed', s)).toBe(l === 'absent' ? 'none' : 'destroy');
  });

  it('stopped: stops what runs or died, leaves the rest', () => {
    for (const s of SERVER) {
      expect(decideAction('running', false, 'stopped', s)).toBe('stop');
      expect(decideAction('starting', false, 'stopped', s)).toBe('stop');
      expect(decideAction('exited', false, 'stopped', s)).toBe('stop');
      expect(decideAction('stopped', false, 'stopped', s)).toBe('none');
      expect(decideAction('absent', true, 'stopped', s)).toBe('none');
    }
  });

  it('running: starts what is not running, unless the server lost it', () => {
    expect(decideAction('absent', false, 'running', null)).toBe('start');
    expect(decideAction('stopped', false, 'running', 'stopped')).toBe('start');
    expect(decideAction('stopped', false, 'running', 'unknown')).toBe('none');
    expect(decideAction('absent', false, 'running', 'offline', false, true)).toBe('gone');
    expect(decideAction('running', false, 'running', 'running')).toBe('update-keys');
    expect(decideAction('running', false, 'running', 'offline')).toBe('update-keys'); // kept, re-adopted
    expect(decideAction('starting', false, 'running', 'loading')).toBe('update-keys');
  });

  it('absent here, to run: started only while provisioning or on a client start; gone when it was here', () => {
    // [server state, held here before, action]
    const table: [string | null, boolean, string][] = [
      [null, false, 'start'], // provisioning
      [null, true, 'start'], // a client start after it was reported gone
      ['loading', false, 'start'], // a start interrupted before anything was made
      ['loading', true, 'start'],
      ['stopped', false, 'start'], // a client start of a stopped instance
      ['stopped', true, 'start'],
      ['running', false, 'gone'], // it ran here and vanished: never made anew silently
      ['running', true, 'gone'],
      ['exited', false, 'none'], // it died already; only a client start (null) brings it back
      ['exited', true, 'none'],
      ['unknown', true, 'gone'], // the host had it and lost it while the server could not see
      ['offline', true, 'gone'],
      ['unknown', false, 'start'], // created just before the agent stopped: never started here
      ['offline', false, 'start'],
    ];
    for (const [server, held, action] of table)
      expect([server, held, decideAction('absent', false, 'running', server, false, held)]).toEqual([
        server,
        held,
        action,
      ]);
    // What failed here (reported gone or exited) is not decided again: only a client start.
    for (const server of ['loading', 'running', 'exited', 'unknown', 'offline'])
      for (const held of [false, true])
        expect(decideAction('absent', true, 'running', server, false, held)).toBe('none');
    // Whatever is here is never `gone`.
    for (const l of LOCAL.filter((x) => x !== 'absent'))
      for (const s of SERVER)
        for (const held of [false, true])
          expect(decideAction(l, false, 'running', s, false, held)).not.toBe('gone');
  });

  it('a gone instance takes no GPU: it comes first and does not hold its machine', () => {
    const gone: ReconcileItem = {
      id: 1,
      machineId: 1,
      local: 'absent',
      failed: false,
      busy: false,
      desired: 'running',
      serverActual: 'running',
    };
    const next: ReconcileItem = { ...gone, id: 2, serverActual: null };
    expect(planReconcile([next, gone], [1])).toEqual([
      { id: 1, action: 'gone' },
      { id: 2, action: 'start' },
    ]);
  });

  it('an exited or failed instance never runs again by itself; a client start restarts it', () => {
    for (const s of ['loading', 'running', 'exited', 'unknown', 'offline']) {
      expect(decideAction('exited', false, 'running', s)).toBe('none');
      expect(decideAction('absent', true, 'running', s)).toBe('none');
    }
    expect(decideAction('exited', false, 'running', null)).toBe('restart');
    expect(decideAction('exited', false, 'running', 'stopped')).toBe('restart');
    expect(decideAction('stopped', true, 'running', 'stopped')).toBe('restart');
  });

  it('outdated by an update: recreated from the new configuration, whatever the server shows', () => {
    for (const s of SERVER) {
      const lost = s === 'unknown' || s === 'offline';
      for (const l of ['stopped', 'starting', 'running', 'exited'] as const) {
        expect(decideAction(l, false, 'running', s, true)).toBe('recreate');
        // The recreate of this configuration failed here: again only on a client's start.
        expect(decideAction(l, true, 'running', s, true)).toBe(
          !lost && (s === null || s === 'stopped') ? 'recreate' : 'none',
        );
      }
      // Nothing here (removed before a crash, or never made): a start of the new configuration,
      // unless the server has lost sight of the host.
      expect(decideAction('absent', false, 'running', s, true)).toBe(lost ? 'none' : 'start');
      expect(decideAction('absent', true, 'running', s, true)).toBe(
        !lost && (s === null || s === 'stopped') ? 'start' : 'none',
      );
      // Desired stopped: stopped first, then replaced, left stopped; nothing here, nothing to do.
      expect(decideAction('running', false, 'stopped', s, true)).toBe('stop');
      expect(decideAction('exited', false, 'stopped', s, true)).toBe('stop');
      expect(decideAction('stopped', false, 'stopped', s, true)).toBe('recreate-stopped');
      expect(decideAction('stopped', true, 'stopped', s, true)).toBe('none');
      expect(decideAction('absent', false, 'stopped', s, true)).toBe('none');
      // A destroy wins over an update.
      expect(decideAction('running', false, 'destroyed', s, true)).toBe('destroy');
    }
  });
});

describe('agent reconcile per machine (one slot, one running container)', () => {
  const item = (p: Partial<ReconcileItem> & { id: number }): ReconcileItem => ({
    machineId: 1,
    local: 'absent',
    failed: false,
    busy: false,
    desired: 'running',
    serverActual: null,
    ...p,
  });

  it("B's start waits while A's stop is under way on the same machine, then follows", () => {
    const a = item({ id: 1, local: 'running', desired: 'stopped', serverActual: 'stopped' });
    const b = item({ id: 2, local: 'absent', desired: 'running', serverActual: null });
    expect(planReconcile([b, a], [1])).toEqual([
      { id: 1, action: 'stop' },
      { id: 2, action: 'wait' },
    ]);
    // Next sync: A's stop is still running (busy) → B still waits.
    expect(planReconcile([b, { ...a, busy: true }], [1])).toEqual([{ id: 2, action: 'wait' }]);
    // A is stopped here: B starts.
    expect(planReconcile([b, { ...a, local: 'stopped' }], [1])).toEqual([{ id: 2, action: 'start' }]);
  });

  it('a start of a stopped instance waits for a destroy, and for a running or starting neighbour', () => {
    const b = item({ id: 2, local: 'stopped', serverActual: 'stopped' });
    expect(planReconcile([item({ id: 1, local: 'running', desired: 'destroyed' }), b], [1])).toEqual([
      { id: 1, action: 'destroy' },
      { id: 2, action: 'wait' },
    ]);
    for (const local of ['running', 'starting'] as const) {
      expect(planReconcile([item({ id: 1, local, serverActual: 'running' }), b], [1])).toEqual([
        { id: 1, action: 'update-keys' },
        { id: 2, action: 'wait' },
      ]);
    }
    // A neighbour whose main process died does not hold the GPUs: the start goes ahead.
    expect(planReconcile([item({ id: 1, local: 'exited', serverActual: 'exited' }), b], [1])).toEqual([
      { id: 2, action: 'start' },
    ]);
  });

  it('a restart of an exited instance (the server shows it null again) waits the same way', () => {
    const b = item({ id: 2, local: 'exited', serverActual: null });
    expect(
      planReconcile([item({ id: 1, local: 'running', desired: 'stopped', busy: true }), b], [1]),
    ).toEqual([{ id: 2, action: 'wait' }]);
    expect(planReconcile([b], [1])).toEqual([{ id: 2, action: 'restart' }]);
  });

  it('machines are independent, and at most one start per machine is begun', () => {
    const plan = planReconcile(
      [
        item({ id: 1, machineId: 1, local: 'running', desired: 'stopped' }),
        item({ id: 2, machineId: 1 }),
        item({ id: 3, machineId: 2 }),
        item({ id: 4, machineId: 2, local: 'stopped', serverActual: 'stopped' }),
      ],
      [1, 2],
    );
    expect(plan).toEqual([
      { id: 1, action: 'stop' },
      { id: 2, action: 'wait' },
      { id: 3, action: 'start' },
      { id: 4, action: 'wait' },
    ]);
  });

  it('an instance still running on a machine the server no longer knows blocks every start', () => {
    const orphan = item({ id: 9, machineId: 0, local: 'running', desired: 'destroyed' });
    expect(planReconcile([orphan, item({ id: 2, machineId: 1 })], [1])).toEqual([
      { id: 9, action: 'destroy' },
      { id: 2, action: 'wait' },
    ]);
    expect(planReconcile([{ ...orphan, local: 'absent' }, item({ id: 2, machineId: 1 })], [1])).toEqual([
      { id: 2, action: 'start' },
    ]);
  });

  it('a recreate that runs the new container waits for the machine like a start; one left stopped does not', () => {
    const neighbour = item({ id: 1, local: 'running', desired: 'stopped' });
    const updated = item({ id: 2, local: 'stopped', serverActual: 'loading', stale: true });
    expect(planReconcile([neighbour, updated], [1])).toEqual([
      { id: 1, action: 'stop' },
      { id: 2, action: 'wait' },
    ]);
    // Running itself, it holds its own machine: recreated at once.
    expect(planReconcile([{ ...updated, local: 'running' }], [1])).toEqual([{ id: 2, action: 'recreate' }]);
    const stopped = item({
      id: 3,
      local: 'stopped',
      desired: 'stopped',
      serverActual: 'stopped',
      stale: true,
    });
    expect(planReconcile([item({ id: 4, local: 'running', serverActual: 'running' }), stopped], [1])).toEqual(
      [
        { id: 3, action: 'recreate-stopped' },
        { id: 4, action: 'update-keys' },
      ],
    );
    // One operation at a time: a busy instance is not recreated until its operation ends.
    expect(planReconcile([{ ...updated, local: 'running', busy: true }], [1])).toEqual([]);
  });

  it('stops and destroys come first; busy instances get nothing', () => {
    const plan = planReconcile(
      [
        item({ id: 1, machineId: 1 }),
        item({ id: 2, machineId: 2, local: 'running', desired: 'destroyed' }),
        item({ id: 3, machineId: 3, local: 'running', desired: 'running', busy: true }),
      ],
      [1, 2, 3],
    );
    expect(plan.map((p) => p.action)).toEqual(['destroy', 'start']);
  });
});
