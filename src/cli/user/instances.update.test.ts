// update instance's body from the command's options: only what is given (the instance, or the
// template, keeps the rest), the env read as create reads --env, onstart from a file or a command.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { updateBody } from './instances.js';
import { UsageError } from './context.js';

describe('update instance body', () => {
  it('sends only the options given, the env as create sends it', () => {
    expect(updateBody({ image: 'python:3.12' })).toEqual({ image: 'python:3.12' });
    expect(updateBody({ env: ["-e A=1 -p 8080:8080 B='two words'"], onstartCmd: 'echo hi' })).toEqual({
      env: { A: '1', '-p 8080:8080': '1', B: 'two words' },
      onstart: 'echo hi',
    });
    expect(updateBody({ runtype: 'ssh' })).toEqual({ runtype: 'ssh' });
    expect(updateBody({ template: ' 3f2a ', args: ['-c', 'sleep 1'] })).toEqual({
      template_hash_id: '3f2a',
      args: ['-c', 'sleep 1'],
    });
  });

  it('reads --onstart from a file; refuses both forms, nothing to change, an empty image or template', () => {
    const dir = mkdtempSync(join(tmpdir(), 'update-onstart-'));
    try {
      const f = join(dir, 's.sh');
      writeFileSync(f, '#!/bin/sh\necho new\n');
      expect(updateBody({ onstart: f })).toEqual({ onstart: '#!/bin/sh\necho new\n' });
      expect(() => updateBody({ onstart: f, onstartCmd: 'x' })).toThrow(UsageError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(() => updateBody({})).toThrow('nothing to update');
    expect(() => updateBody({ image: ' ' })).toThrow('--image');
    expect(() => updateBody({ template: '' })).toThrow('--template');
    expect(() => updateBody({ env: ['-x y'] })).toThrow('--env');
  });
});
