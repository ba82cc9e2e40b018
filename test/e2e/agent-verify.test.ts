// Machine verification: an agent's machines start unverified, so the default search (verified
// only) finds nothing and the CLI says unverified offers match; `openrig admin verify-machine`
// verifies (and --unverify unverifies) one; with OPENRIG_AUTO_VERIFY=on new machines start verified.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  endInstanceGroups,
  runCli,
  startProc,
  startServe,
  waitFor,
  type Proc,
  processAgentArgs,
  waitRegistered,
} from '../helpers/process.js';

const ENV = { OPENRIG_SECRET_KEY: 'be'.repeat(32), OPENRIG_RATE_LIMITS: 'off', OPENRIG_LOG_LEVEL: 'warn' };

describe('machine verification', () => {
  let dir: string;
  let serve: Proc & { url: string };
  const agents: Proc[] = [];
  let hostKey: string;
  let renterKey: string;

  const startAgent = async (stateDir: string) => {
    const p = startProc(
      processAgentArgs(serve.url, stateDir, { gpus: 'RTX 3090', priceGpu: '0.3', sshBind: null }),
      { ...ENV, OPENRIG_API_KEY: hostKey, OPENRIG_HEARTBEAT_S: '1' },
    );
    agents.push(p);
    const [machine] = await waitRegistered(p);
    return machine!;
  };
  const search = () =>
    runCli(['search', 'offers', 'gpu_name=RTX_3090'], {
      OPENRIG_URL: serve.url,
      OPENRIG_API_KEY: renterKey,
      HOME: dir,
    });

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'openrig-verify-'));
    serve = await startServe(['--data', dir], ENV);
    const user = async (email: string) =>
      JSON.parse(
        (await runCli(['admin', 'create-user', '--data', dir, '--email', email, '--email-verified'], ENV))
          .stdout,
      );
    hostKey = (await user('host@example.com')).api_key;
    renterKey = (await user('renter@example.com')).api_key;
  });
  afterAll(() => {
    for (const a of agents) a.child.kill('SIGKILL');
    serve?.child.kill('SIGTERM');
    endInstanceGroups(path.join(dir, 'a1'));
    rmSync(dir, { recursive: true, force: true });
  });

  it('unverified machines: the CLI hint, verify-machine and --unverify; OPENRIG_AUTO_VERIFY=on', async () => {
    const id = await startAgent(path.join(dir, 'a1'));
    const hint = await search();
    expect(hint.code).toBe(0);
    expect(hint.stdout).toMatch(/1 unverified offer match; add verified=any/);
    expect(
      (
        await runCli(['search', 'offers', 'gpu_name=RTX_3090 verified=any'], {
          OPENRIG_URL: serve.url,
          OPENRIG_API_KEY: renterKey,
          HOME: dir,
        })
      ).stdout,
    ).toMatch(/RTX 3090/);

    const v = await runCli(['admin', 'verify-machine', '--data', dir, '--id', String(id)], ENV);
    expect(v.code, v.stderr).toBe(0);
    expect(JSON.parse(v.stdout)).toEqual({ id, verification: 'verified' });
    await waitFor(
      async () => /RTX 3090/.test((await search()).stdout),
      'the offer to be listed',
      10_000,
      500,
    );
    const u = await runCli(['admin', 'verify-machine', '--data', dir, '--id', String(id), '--unverify'], ENV);
    expect(JSON.parse(u.stdout)).toEqual({ id, verification: 'deverified' });
    const none = await runCli(['admin', 'verify-machine', '--data', dir, '--id', '999999'], ENV);
    expect(none.code).not.toBe(0);

    serve.child.kill('SIGTERM');
    await serve.exited;
    serve = await startServe(['--data', dir], { ...ENV, OPENRIG_AUTO_VERIFY: 'on' });
    const id2 = await startAgent(path.join(dir, 'a2'));
    expect(id2).not.toBe(id);
    const machines = await fetch(`${serve.url}/api/v0/machines/`, {
      headers: { authorization: `Bearer ${hostKey}` },
    });
    const rows = (
      (await machines.json()) as { machines: { id: number; verified?: boolean; verification?: string }[] }
    ).machines;
    const m2 = rows.find((m) => m.id === id2)!;
    expect(m2.verified ?? m2.verification === 'verified').toBe(true);
    expect(rows.find((m) => m.id === id)!.verified ?? false).toBe(false); // an existing machine keeps its flag
  }, 120_000);
});
