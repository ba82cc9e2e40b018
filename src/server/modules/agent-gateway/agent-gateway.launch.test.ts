// The launch of an instance as its agent is told it: runtype `args` carries the arguments and the
// entrypoint (sent as onstart by the official client); the other runtypes carry neither.
import { describe, expect, it } from 'vitest';
import { launchOf } from './agent-gateway.launch.js';

describe('launchOf', () => {
  it('runtype args: the stored arguments, and onstart as the entrypoint', () => {
    expect(launchOf('args', JSON.stringify(['-c', 'echo hi; sleep 1000']), '/bin/sh')).toEqual({
      args: ['-c', 'echo hi; sleep 1000'],
      entrypoint: '/bin/sh',
    });
    expect(launchOf('args', JSON.stringify(['-c', 'x']), '  bash\n')).toEqual({
      args: ['-c', 'x'],
      entrypoint: 'bash',
    });
  });
  it("runtype args without an entrypoint keeps the image's; without args passes none", () => {
    expect(launchOf('args', JSON.stringify(['serve', '--port', '80']), '')).toEqual({
      args: ['serve', '--port', '80'],
      entrypoint: null,
    });
    expect(launchOf('args', null, '')).toEqual({ args: [], entrypoint: null });
  });
  it('ssh and jupyter runtypes leave both out, even with args stored', () => {
    expect(launchOf('ssh', null, 'echo hi')).toEqual({});
    expect(launchOf('ssh_direc ssh_proxy', JSON.stringify(['-c', 'x']), 'bash')).toEqual({});
    expect(launchOf('jupyter_proxy ssh_proxy', null, '')).toEqual({});
  });
});
