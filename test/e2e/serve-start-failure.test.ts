// `openrig serve --workers 2` that cannot start, as real processes: the port taken, PostgreSQL
// unreachable, a bad log level. The start fails as a whole: one message with the reason, exit 1
// within seconds, no process of the cluster left, and no background job started (on a shared
// database a primary left running would run them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDb, describeEachDb, type TestDb } from '../helpers/db.js';
import { startProc, waitFor, type Proc } from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'c3'.repeat(32), OPENRIG_LOG_LEVEL: 'info', OPENRIG_RATE_LIMITS: 'off' };

/** The pids of the live processes in process group `pgid` (startProc gives each its own). */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const fields = readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ');
      // state, ppid, pgrp: a zombie has exited already.
      if (Number(fields[2]) === pgid && fields[0] !== 'Z') out.push(Number(d));
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** Waits for `p` to exit, failing after `ms`; the exit code and how long it took. */
async function exitWithin(p: Proc, ms: number): Promise<{ code: number | null; ms: number }> {
  const t0 = Date.now();
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(
      () => reject(new Error(`serve still running after ${ms} ms: ${p.stderr()} ${p.stdout()}`)),
      ms,
    ).unref(),
  );
  const { code } = await Promise.race([p.exited, timeout]);
  return { code, ms: Date.now() - t0 };
}

/** Asserts that the failed `serve` left nothing behind and started no background job. */
async function expectAllGone(p: Proc): Promise<void> {
  const pgid = p.child.pid!;
  await waitFor(
    () => groupMembers(pgid).length === 0,
    () => `no process left (${groupMembers(pgid).join(', ')})`,
    3000,
  );
  expect(p.stdout()).not.toContain('background jobs started');
  expect(p.stdout()).not.toContain('listening on');
}

describeEachDb('serve --workers 2 that cannot start', (dialect) => {
  let db: TestDb;
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    db = await createTestDb(dialect);
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => holder?.close(resolve));
    await db?.cleanup();
  });

  it('exits 1 with the reason once when the port is taken, with every worker gone', async () => {
    const p = startProc(
      ['serve', '--port', String(port), '--workers', '2', '--data', db.dataDir, '--database-url', db.url],
      ENV,
    );
    const { code, ms } = await exitWithin(p, 10_000);
    expect(code).toBe(1);
    expect(ms).toBeLessThan(10_000);
    // Both workers fail to bind; the primary reports it once.
    expect(p.stderr().match(/EADDRINUSE/g)).toHaveLength(1);
    expect(p.stderr()).toMatch(/^openrig: .*EADDRINUSE.*:\d+\n$/);
    await expectAllGone(p);
  });
});

describe('serve --workers 2 with PostgreSQL unreachable or a bad log level', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-start-failure-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 1 with the connection error once when PostgreSQL refuses connections', async () => {
    const p = startProc(
      [
        'serve',
        '--port',
        '0',
        '--workers',
        '2',
        '--data',
        dir,
        '--database-url',
        'postgres://postgres@127.0.0.1:1/openrig',
      ],
      ENV,
    );
    const { code } = await exitWithin(p, 10_000);
    expect(code).toBe(1);
    expect(p.stderr().match(/ECONNREFUSED/g)).toHaveLength(1);
    await expectAllGone(p);
  });

  it('refuses OPENRIG_LOG_LEVEL=loud by name before forking, and exits 1', async () => {
    const p = startProc(['serve', '--port', '0', '--workers', '2', '--data', dir], {
      ...ENV,
      OPENRIG_LOG_LEVEL: 'loud',
    });
    const { code } = await exitWithin(p, 10_000);
    expect(code).toBe(1);
    expect(p.stderr()).toBe(
      'openrig: OPENRIG_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")\n',
    );
    await expectAllGone(p);
  });
});
