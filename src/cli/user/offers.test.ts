import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createBody } from './offers.js';
import { encodeOnstart, ONSTART_MAX, parseEnv } from './instance-options.js';
import { UsageError } from './context.js';

describe('create instance body', () => {
  it('takes image, disk, label, env and a command as onstart', () => {
    expect(
      createBody({
        image: 'ubuntu:22.04',
        disk: '20',
        label: 'x',
        onstartCmd: 'echo hi',
        env: ['-e A=1 -p 8080:8080', "B='two words'"],
      }),
    ).toEqual({
      image: 'ubuntu:22.04',
      disk: 20,
      runtype: 'ssh',
      label: 'x',
      onstart: 'echo hi',
      env: { A: '1', '-p 8080:8080': '1', B: 'two words' },
    });
  });

  it('reads --onstart from a file and refuses both forms at once', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'onstart-')), 's.sh');
    writeFileSync(f, '#!/bin/sh\necho ready\n');
    expect(createBody({ image: 'i', disk: '1', onstart: f }).onstart).toBe('#!/bin/sh\necho ready\n');
    expect(() => createBody({ image: 'i', disk: '1', onstart: f, onstartCmd: 'x' })).toThrow(UsageError);
    expect(() => createBody({ image: 'i', disk: '1', onstart: '/nonexistent/x.sh' })).toThrow('cannot read');
  });

  it('rejects a bad disk or price as usage errors', () => {
    expect(() => createBody({ image: 'i', disk: 'ten' })).toThrow('--disk must be a number');
    expect(() => createBody({ image: 'i', disk: '0' })).toThrow('--disk must be a positive');
    expect(() => createBody({ image: 'i', disk: '1', price: '-1' })).toThrow('--price');
  });

  it('without --template: --image is required, and disk and runtype take their defaults', () => {
    expect(createBody({ image: 'ubuntu:22.04' })).toEqual({
      image: 'ubuntu:22.04',
      disk: 10,
      runtype: 'ssh',
    });
    expect(() => createBody({ disk: '20' })).toThrow('--image is required');
    expect(() => createBody({ disk: '20' })).toThrow(UsageError);
  });

  it('with --template: sends the hash and only what was given, so the template fills the rest', () => {
    expect(createBody({ template: 'abc123' })).toEqual({ template_hash_id: 'abc123' });
    expect(
      createBody({
        template: 'abc123',
        disk: '32',
        env: ['-e A=1'],
        label: 'from-tpl',
        onstartCmd: 'echo hi',
      }),
    ).toEqual({
      template_hash_id: 'abc123',
      disk: 32,
      env: { A: '1' },
      label: 'from-tpl',
      onstart: 'echo hi',
    });
    expect(createBody({ template: 'abc123', image: 'alpine:3', runtype: 'args' })).toEqual({
      template_hash_id: 'abc123',
      image: 'alpine:3',
      runtype: 'args',
    });
  });

  it('with --template: bad flags are still usage errors', () => {
    expect(() => createBody({ template: ' ' })).toThrow('--template must be a template hash_id');
    expect(() => createBody({ template: 'h', image: '' })).toThrow('--image must name');
    expect(() => createBody({ template: 'h', disk: '0' })).toThrow('--disk must be a positive');
  });

  it('sends scripts over 4048 characters gzip+base64, and refuses ones too long even then', () => {
    const short = 'a'.repeat(ONSTART_MAX);
    expect(encodeOnstart(short)).toBe(short);
    const long = 'echo hello world\n'.repeat(400);
    const packed = encodeOnstart(long);
    expect(packed.length).toBeLessThanOrEqual(ONSTART_MAX);
    expect(gunzipSync(Buffer.from(packed, 'base64')).toString()).toBe(long);
    const random = randomBytes(6000).toString('base64');
    expect(() => encodeOnstart(random)).toThrow('the limit is 4048');
  });

  it('parses docker-style env and refuses what it does not understand', () => {
    expect(parseEnv(['-e TOKEN="a b"'])).toEqual({ TOKEN: 'a b' });
    expect(() => parseEnv(['-x 1'])).toThrow('unknown flag');
    expect(() => parseEnv(['-p http'])).toThrow('port mapping');
    expect(() => parseEnv(['1A=2'])).toThrow('not a valid variable name');
    expect(() => parseEnv(['NOEQUALS'])).toThrow('is not KEY=VALUE');
  });
});
