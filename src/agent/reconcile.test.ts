import { describe, expect, it } from 'vitest';
import { decideAction, type LocalState } from './reconcile.js';

const LOCAL: LocalState[] = ['absent', 'stopped', 'starting', 'running', 'exited'];
const SERVER = [null, 'loading', 'running', 'exited', 'unknown', 'offline', 'stopped'];

describe('agent reconcile', () => {
  it('destroyed: removes anything that is here', () => {
    for (const l of LOCAL) for (const s of SERVER) expect(decideAction(l, false, 'destroyed', s)).toBe(l === 'absent' ? 'none' : 'destroy');
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
    expect(decideAction('absent', false, 'running', 'offline')).toBe('none');
    expect(decideAction('running', false, 'running', 'running')).toBe('update-keys');
    expect(decideAction('running', false, 'running', 'offline')).toBe('update-keys'); // kept, re-adopted
    expect(decideAction('starting', false, 'running', 'loading')).toBe('update-keys');
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
});
