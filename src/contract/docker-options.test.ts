import { describe, expect, it } from 'vitest';
import { dockerOptionsEnv, shellWords } from './docker-options.js';

describe('docker options', () => {
  it('splits words as a shell does: quotes group spaces and are removed', () => {
    expect(shellWords(`-e MSG="a b" -e X='c d'  -p 80:80`)).toEqual([
      '-e',
      'MSG=a b',
      '-e',
      'X=c d',
      '-p',
      '80:80',
    ]);
    expect(shellWords('   ')).toEqual([]);
  });

  it('reads -e, --env and bare NAME=VALUE as variables, -p as a port key', () => {
    expect(
      dockerOptionsEnv(shellWords('-e A=1 --env B==2 C= -p 8080:8080 -p 127.0.0.1:22:22/tcp -p 5353/udp')),
    ).toEqual({
      env: { A: '1', B: '=2', C: '', '-p 8080:8080': '1', '-p 127.0.0.1:22:22/tcp': '1', '-p 5353/udp': '1' },
    });
    expect(dockerOptionsEnv([])).toEqual({ env: {} });
  });

  it('names the word it does not understand', () => {
    const error = (text: string) => {
      const r = dockerOptionsEnv(shellWords(text));
      return 'error' in r ? r.error : null;
    };
    expect(error('-v /:/host')).toBe('unknown flag "-v" (use -e KEY=VALUE or -p HOST:CONTAINER)');
    expect(error('-e')).toBe('-e needs KEY=VALUE');
    expect(error('-p')).toBe('-p needs a port mapping like 8080:8080, not ""');
    expect(error('-p 80:eighty')).toBe('-p needs a port mapping like 8080:8080, not "80:eighty"');
    expect(error('-e NOEQUALS')).toBe('"NOEQUALS" is not KEY=VALUE');
    expect(error('=x')).toBe('"=x" is not KEY=VALUE');
    expect(error('-e 1BAD=x')).toBe('"1BAD" is not a valid variable name');
  });
});
