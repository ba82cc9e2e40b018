import { describe, expect, it } from 'vitest';
import {
  ACTUAL_STATUSES,
  INTENDED_STATUSES,
  REPORTED_STATUSES,
  allowedActions,
  applyAgentReport,
  applySweep,
  decideStateRequest,
  decideUpdate,
  isComputeBilled,
  type ActualStatus,
  type InstanceState,
  type IntendedStatus,
  type ReportedStatus,
} from './instance-states.js';

const ALL: InstanceState[] = ACTUAL_STATUSES.flatMap((actual) =>
  INTENDED_STATUSES.map((intended) => ({ actual, intended })),
);

/** Expected agent transitions, as a table: [from actual, intended, reported] → next (or 'noop' / 'reject'). */
function expectedReport(s: InstanceState, r: ReportedStatus): ActualStatus | 'noop' | 'reject' {
  if (s.actual === r) return 'noop';
  const live = s.intended === 'running';
  switch (r) {
    case 'loading':
      return live && (s.actual === null || s.actual === 'stopped') ? 'loading' : 'reject';
    case 'running':
      return live && [null, 'loading', 'unknown', 'offline'].includes(s.actual) ? 'running' : 'reject';
    case 'exited':
      return [null, 'loading', 'running', 'unknown', 'offline'].includes(s.actual) ? 'exited' : 'reject';
    case 'stopped':
      return s.intended === 'stopped' ? 'stopped' : 'reject';
  }
}

describe('instance state machine: agent reports', () => {
  for (const s of ALL) {
    for (const r of REPORTED_STATUSES) {
      it(`${String(s.actual)}/${s.intended} + report ${r}`, () => {
        const d = applyAgentReport(s, r);
        const want = expectedReport(s, r);
        if (want === 'noop' || want === 'reject') expect(d.kind).toBe(want);
        else expect(d).toEqual({ kind: 'apply', next: want });
      });
    }
  }

  it('follows the path null → loading → running', () => {
    let s: InstanceState = { actual: null, intended: 'running' };
    for (const r of ['loading', 'running'] as const) {
      const d = applyAgentReport(s, r);
      expect(d.kind).toBe('apply');
      if (d.kind === 'apply') s = { ...s, actual: d.next };
    }
    expect(s.actual).toBe('running');
  });

  it('never lets exited reach running by itself; unknown and offline come back only when the agent still runs it', () => {
    for (const intended of INTENDED_STATUSES) {
      expect(applyAgentReport({ actual: 'exited', intended }, 'running').kind).toBe('reject');
    }
    for (const actual of ['exited', 'unknown', 'offline'] as const) {
      expect(applySweep({ actual, intended: 'running' }, 'unknown').kind).not.toBe('apply');
      expect(applyAgentReport({ actual, intended: 'running' }, 'loading').kind).toBe('reject');
    }
    expect(applyAgentReport({ actual: 'offline', intended: 'running' }, 'running')).toEqual({
      kind: 'apply',
      next: 'running',
    });
    expect(applyAgentReport({ actual: 'offline', intended: 'stopped' }, 'running').kind).toBe('reject');
  });

  it('names both states when it rejects a report', () => {
    const d = applyAgentReport({ actual: 'exited', intended: 'running' }, 'running');
    expect(d).toEqual({
      kind: 'reject',
      reason: 'cannot go from exited to running: exited never reaches running by itself',
    });
  });
});

describe('instance state machine: heartbeat sweeps', () => {
  for (const s of ALL) {
    it(`${String(s.actual)}/${s.intended} → unknown / offline`, () => {
      const u = applySweep(s, 'unknown');
      if (s.actual === null || s.actual === 'loading' || s.actual === 'running')
        expect(u).toEqual({ kind: 'apply', next: 'unknown' });
      else expect(u.kind).toBe('noop');
      const o = applySweep(s, 'offline');
      if (s.actual === 'offline') expect(o.kind).toBe('noop');
      else expect(o).toEqual({ kind: 'apply', next: 'offline' });
    });
  }
});

describe('instance state machine: client requests', () => {
  function expectedRequest(s: InstanceState, want: IntendedStatus): 'noop' | 'refuse' | InstanceState {
    if (want === 'stopped') {
      if (s.intended === 'stopped') return 'noop';
      if (s.actual === null || s.actual === 'loading' || s.actual === 'running')
        return { actual: 'stopped', intended: 'stopped' };
      return 'refuse';
    }
    if (s.intended === 'running' && (s.actual === null || s.actual === 'loading' || s.actual === 'running'))
      return 'noop';
    if (s.actual === 'stopped') return { actual: 'stopped', intended: 'running' };
    // A restart: back to null (provisioning), which the agent starts again.
    if (s.actual === 'exited') return { actual: null, intended: 'running' };
    return 'refuse';
  }
  for (const s of ALL) {
    for (const want of INTENDED_STATUSES) {
      it(`${String(s.actual)}/${s.intended} + PUT state=${want}`, () => {
        const d = decideStateRequest(s, want);
        const e = expectedRequest(s, want);
        if (e === 'noop' || e === 'refuse') expect(d.kind).toBe(e);
        else expect(d).toEqual({ kind: 'apply', next: e });
        if (d.kind === 'refuse') expect(d.msg).toContain(s.actual === null ? 'null' : s.actual);
        // allowed_actions agrees with what the request does.
        const action = want === 'stopped' ? 'stop' : 'start';
        expect(allowedActions(s).includes(action)).toBe(d.kind === 'apply');
      });
    }
  }

  it('halts compute billing on stop and resumes it only once the agent reports running', () => {
    const running: InstanceState = { actual: 'running', intended: 'running' };
    expect(isComputeBilled(running)).toBe(true);
    const stop = decideStateRequest(running, 'stopped');
    expect(stop.kind).toBe('apply');
    const stopped = stop.kind === 'apply' ? stop.next : running;
    expect(isComputeBilled(stopped)).toBe(false);
    const start = decideStateRequest(stopped, 'running');
    const starting = start.kind === 'apply' ? start.next : stopped;
    expect(starting).toEqual({ actual: 'stopped', intended: 'running' });
    expect(isComputeBilled(starting)).toBe(false);
    const boot = applyAgentReport(starting, 'loading');
    expect(boot).toEqual({ kind: 'apply', next: 'loading' });
    const up = applyAgentReport({ actual: 'loading', intended: 'running' }, 'running');
    expect(up).toEqual({ kind: 'apply', next: 'running' });
  });

  it('a start of an exited instance goes back to provisioning, then loading and running', () => {
    for (const intended of INTENDED_STATUSES) {
      const start = decideStateRequest({ actual: 'exited', intended }, 'running');
      expect(start).toEqual({ kind: 'apply', next: { actual: null, intended: 'running' } });
    }
    // Until the client starts it, the agent cannot bring it back: exited never runs by itself.
    expect(applyAgentReport({ actual: 'exited', intended: 'running' }, 'loading').kind).toBe('reject');
    expect(applyAgentReport({ actual: null, intended: 'running' }, 'loading')).toEqual({
      kind: 'apply',
      next: 'loading',
    });
    // unknown and offline stay refused: the client destroys.
    for (const actual of ['unknown', 'offline'] as const)
      expect(decideStateRequest({ actual, intended: 'running' }, 'running').kind).toBe('refuse');
  });

  it('bills compute in exactly one state pair', () => {
    expect(ALL.filter(isComputeBilled)).toEqual([{ actual: 'running', intended: 'running' }]);
  });

  it('always allows destroy, label and ssh_attach', () => {
    for (const s of ALL)
      expect(allowedActions(s)).toEqual(expect.arrayContaining(['destroy', 'label', 'ssh_attach']));
  });
});

describe('instance state machine: configuration updates', () => {
  for (const s of ALL) {
    it(`${String(s.actual)}/${s.intended} + update`, () => {
      const d = decideUpdate(s);
      if (s.actual === 'unknown' || s.actual === 'offline') {
        expect(d.kind).toBe('refuse');
        if (d.kind === 'refuse') expect(d.msg).toContain(`state ${s.actual}`);
      } else if (s.intended === 'stopped') expect(d).toEqual({ kind: 'apply', next: s });
      else expect(d).toEqual({ kind: 'apply', next: { actual: 'loading', intended: 'running' } });
    });
  }

  it('a running instance being recreated is not billed for compute until the agent reports it running', () => {
    const d = decideUpdate({ actual: 'running', intended: 'running' });
    expect(d.kind).toBe('apply');
    if (d.kind !== 'apply') return;
    expect(isComputeBilled(d.next)).toBe(false);
    const r = applyAgentReport(d.next, 'running');
    expect(r).toEqual({ kind: 'apply', next: 'running' });
  });

  it('an updated exited instance runs again through the reports of its new container', () => {
    const d = decideUpdate({ actual: 'exited', intended: 'running' });
    expect(d).toEqual({ kind: 'apply', next: { actual: 'loading', intended: 'running' } });
    if (d.kind !== 'apply') return;
    expect(applyAgentReport(d.next, 'running')).toEqual({ kind: 'apply', next: 'running' });
    expect(applyAgentReport(d.next, 'exited')).toEqual({ kind: 'apply', next: 'exited' });
  });
});
