import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Template } from '../../contract/api-types.js';
import { templateBody, templatesTable } from './templates.js';

describe('create template body', () => {
  it('sends name, image and private, and of the rest only what was given', () => {
    expect(templateBody({ name: 'torch', image: 'pytorch/pytorch' })).toEqual({
      name: 'torch',
      image: 'pytorch/pytorch',
      private: true,
    });
    expect(
      templateBody({
        name: 'torch',
        image: 'pytorch/pytorch',
        tag: 'latest',
        env: ['-e A="a b"', '-p 8888:8888'],
        onstartCmd: 'echo hi',
        disk: '8.5',
        ssh: true,
        public: true,
      }),
    ).toEqual({
      name: 'torch',
      image: 'pytorch/pytorch',
      tag: 'latest',
      env: '-e A="a b" -p 8888:8888',
      onstart: 'echo hi',
      recommended_disk_space: 8.5,
      runtype: 'ssh',
      use_ssh: true,
      private: false,
    });
    expect(templateBody({ name: 'n', image: 'i', args: true }).runtype).toBe('args');
  });

  it('reads --onstart FILE as create instance does; --onstart-cmd is the command itself', () => {
    const f = join(mkdtempSync(join(tmpdir(), 'tpl-onstart-')), 's.sh');
    writeFileSync(f, 'echo ready\n');
    expect(templateBody({ name: 'n', image: 'i', onstart: f }).onstart).toBe('echo ready\n');
    expect(templateBody({ name: 'n', image: 'i', onstartCmd: 'echo hi' }).onstart).toBe('echo hi');
    expect(() => templateBody({ name: 'n', image: 'i', onstart: f, onstartCmd: 'x' })).toThrow('not both');
    expect(() => templateBody({ name: 'n', image: 'i', onstart: `${f}.missing` })).toThrow(
      '--onstart: cannot read',
    );
  });

  it.each([
    [{ name: ' ', image: 'i' }, '--name must name'],
    [{ name: 'n', image: '' }, '--image must name'],
    [{ name: 'n', image: 'i', tag: 'a:b' }, '--tag must be one image tag'],
    [{ name: 'n', image: 'i', env: ['-x 1'] }, '--env: '],
    [{ name: 'n', image: 'i', onstart: 'f', onstartCmd: 'a' }, 'not both'],
    [{ name: 'n', image: 'i', onstart: '/nonexistent/s.sh' }, 'cannot read'],
    [{ name: 'n', image: 'i', disk: '0' }, '--disk must be a positive'],
    [{ name: 'n', image: 'i', disk: 'ten' }, '--disk must be a number'],
    [{ name: 'n', image: 'i', ssh: true, args: true }, '--ssh or --args, not both'],
  ])('usage error for %j', (opts, msg) => {
    expect(() => templateBody(opts)).toThrow(msg);
  });
});

describe('templates table', () => {
  it('shows hash, name, image:tag, disk, runtype, visibility and age', () => {
    const t = {
      id: 1,
      hash_id: 'ab'.repeat(16),
      creator_id: 1,
      name: 'torch',
      image: 'pytorch/pytorch',
      tag: 'latest',
      env: '',
      onstart: '',
      runtype: 'ssh',
      recommended_disk_space: 50,
      private: false,
      created_at: 1_000,
      updated_at: 1_000,
    } satisfies Template;
    const out = templatesTable(
      [t, { ...t, tag: null, recommended_disk_space: null, private: true }],
      1_060_000,
    );
    const lines = out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^Hash\s+Name\s+Image\s+Disk\s+Runtype\s+Visibility\s+Created$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${t.hash_id}\\s+torch\\s+pytorch/pytorch:latest\\s+50 GB\\s+ssh\\s+public\\s+1m ago$`),
    );
    expect(lines[2]).toMatch(/\s+pytorch\/pytorch\s+-\s+ssh\s+private\s+1m ago$/);
  });
});
