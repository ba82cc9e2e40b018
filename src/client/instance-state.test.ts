import { describe, expect, it } from 'vitest';
import { instanceState, isSettled } from './instance-state.js';

describe('instanceState', () => {
  it('an instance asked to run whose container exited is exited or failed, never starting', () => {
    // An image that cannot be pulled: it never ran, so no SSH port was ever set.
    expect(instanceState({ intended_status: 'running', actual_status: 'exited', ssh_port: null })).toBe(
      'failed',
    );
    // It ran, then its main process died.
    expect(instanceState({ intended_status: 'running', actual_status: 'exited', ssh_port: 40022 })).toBe(
      'exited',
    );
    expect(isSettled('failed')).toBe(true);
    expect(isSettled('exited')).toBe(true);
  });

  it('a pending start or stop reads as the move under way', () => {
    expect(instanceState({ intended_status: 'running', actual_status: 'stopped' })).toBe('starting');
    for (const a of ['running', 'loading', null])
      expect(instanceState({ intended_status: 'stopped', actual_status: a })).toBe('stopping');
    expect(isSettled('starting')).toBe(false);
    expect(isSettled('stopping')).toBe(false);
  });

  it('every other status reads as itself, null as provisioning', () => {
    expect(instanceState({ intended_status: 'running', actual_status: null })).toBe('provisioning');
    for (const a of ['loading', 'running', 'unknown', 'offline'] as const)
      expect(instanceState({ intended_status: 'running', actual_status: a })).toBe(a);
    expect(instanceState({ intended_status: 'stopped', actual_status: 'stopped' })).toBe('stopped');
    expect(instanceState({ intended_status: 'stopped', actual_status: 'offline' })).toBe('offline');
  });
});
