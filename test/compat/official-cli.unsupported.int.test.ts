// The official CLI's commands that openrig does not serve: each request, as the CLI sends it, is
// answered 400 not_supported naming the command, with or without a key. And docs/compatibility.md
// lists every command once: its "not supported" rows are exactly the commands answered so, and
// each "works" row names a test file that exercises that command.
import { readFileSync, existsSync } from 'node:fs';
import { expect, it } from 'vitest';
import { describeEachDb } from '../helpers/db.js';
import { useTestApp } from '../helpers/app.js';
import { UNSUPPORTED_REQUESTS } from '../../src/server/modules/compat/compat.unsupported.js';
import { SELF_TEST_COMMAND } from '../../src/server/modules/compat/compat.self-test.js';
import { cli } from './official-cli.js';

interface DocRow {
  command: string;
  status: string;
  test: string;
}

function docRows(): DocRow[] {
  const text = readFileSync('docs/compatibility.md', 'utf8');
  const rows: DocRow[] = [];
  for (const line of text.split('\n')) {
    const m = /^\| `([^`]+)` \| ([^|]+) \|.*\| (?:`([^`]*)`)? ?\|$/.exec(line);
    if (m) rows.push({ command: m[1]!, status: m[2]!.trim(), test: m[3] ?? '' });
  }
  return rows;
}

/** "reboot instance --schedule" is a form of the "reboot instance" command. */
const baseCommand = (c: string) => c.replace(/ --.*$/, '');

describeEachDb('official CLI: commands openrig does not serve', (dialect) => {
  const t = useTestApp(dialect);

  it('answers each request with 400 not_supported naming the command, with or without a key', async () => {
    const key = (await t().user()).apiKey;
    for (const u of UNSUPPORTED_REQUESTS) {
      const path = u.path.replace(':id', '3') + '/';
      const root = !path.startsWith('/api/');
      for (const k of [key, null]) {
        const r = await cli(t(), {
          method: u.method,
          path,
          root,
          key: k,
          json: u.method === 'GET' ? undefined : {},
        });
        expect(r.status, `${u.method} ${path}`).toBe(400);
        expect(r.contentType).toBe('application/json');
        expect(r.body.error).toBe('not_supported');
        for (const c of u.commands) expect(r.body.msg).toContain(`"${c}"`);
        expect(r.body.msg).toContain('docs/compatibility.md');
      }
    }
  });
});

it('docs/compatibility.md: one row per command; "not supported" rows are the commands answered so', () => {
  const rows = docRows();
  const names = rows.map((r) => r.command);
  expect(new Set(names).size).toBe(names.length);
  expect(rows.length).toBe(140);
  const answered = new Set(UNSUPPORTED_REQUESTS.flatMap((u) => u.commands.map(baseCommand)));
  for (const c of answered) expect(names, c).toContain(c);
  // Commands refused within a request openrig serves: the self-test's create of the test image.
  const clientOnly = new Set([SELF_TEST_COMMAND]);
  for (const r of rows.filter((x) => x.status === 'not supported')) {
    expect(answered.has(r.command) || clientOnly.has(r.command), r.command).toBe(true);
  }
  for (const r of rows.filter((x) => x.status === 'works')) {
    const file = `test/compat/${r.test}`;
    expect(existsSync(file), `${r.command}: ${file}`).toBe(true);
    expect(readFileSync(file, 'utf8'), `${r.command} in ${file}`).toContain(r.command);
  }
  for (const r of rows) expect(['works', 'works (local)', 'not supported'], r.command).toContain(r.status);
});
