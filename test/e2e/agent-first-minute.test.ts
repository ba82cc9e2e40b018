// A new host's first minute, through the built CLI and a real process-runtime agent started with
// `--public-host 127.0.0.2 --location "Oslo, NO"` and no --ssh-bind: the agent says its machine is
// unverified, hidden from renters' default searches, and what makes it visible (the operator's
// rule); `show machines` and `list machine` say the same; a search by country (the official
// client's geolocation filter, and openrig's) finds it once unverified offers are asked for, and
// finds it by default once an operator verified it; the instance's SSH server listens on the
// chosen loopback address, not on every interface.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, runCli } from '../helpers/process.js';
import { cli, startAgentWorld, type AgentWorld } from './cli-harness.js';

const RULE = 'write to ops@example.com with your machine ID; we verify hosts within a day';
let w: AgentWorld;
const run = (args: string[], key: string) => cli(w.home, args, { OPENRIG_URL: w.url, OPENRIG_API_KEY: key });

/** The machine ids of an official-client search for offers in Norway (`search offers geolocation=NO`). */
async function officialSearch(verified: boolean | null): Promise<number[]> {
  const body: Record<string, unknown> = {
    external: { eq: false },
    rentable: { eq: true },
    rented: { eq: false },
    geolocation: { eq: 'NO' },
    order: [['score', 'desc']],
    type: 'on-demand',
    allocated_storage: 5.0,
  };
  if (verified !== null) body.verified = { eq: verified };
  const r = await callApi(w.url, 'POST', '/api/v0/bundles/', w.renterKey, body);
  expect(r.status).toBe(200);
  return (r.body.offers as { machine_id: number }[]).map((o) => o.machine_id);
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

beforeAll(async () => {
  w = await startAgentWorld({
    env: { OPENRIG_VERIFICATION_RULE: RULE, OPENRIG_HEARTBEAT_S: '1' },
    host: 'first-minute-host@example.com',
    renter: 'first-minute-renter@example.com',
    agent: { sshBind: null, extra: ['--public-host', '127.0.0.2', '--location', 'Oslo, no'] },
  });
}, 90_000);
afterAll(() => w?.stop());

describe("a new host's first minute", { timeout: 120_000 }, () => {
  it('the agent says the machine is unverified, hidden by default, and what makes it visible', () => {
    expect(w.agent.stdout()).toContain(
      `machine ${w.machine}: unverified, so hidden from renters' default searches (openrig search offers and the official client list verified machines unless asked for verified=any). To be visible: ${RULE}.\n`,
    );
  });

  it('show machines and list machine say so too', async () => {
    const shown = await run(['show', 'machines'], w.hostKey);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/\bVerified\b/);
    expect(shown.stdout).toMatch(/\bunverified\b/);
    expect(shown.stdout).toContain(`To be visible: ${RULE}.`);
    const listed = await run(['list', 'machine', String(w.machine), '--price-gpu', '0.5'], w.hostKey);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      `machine ${w.machine}: unverified, so hidden from renters' default searches`,
    );
    expect(listed.stdout).toContain(`To be visible: ${RULE}.`);
  });

  it('a search by country finds it: with verified=any now, by default once verified', async () => {
    expect(await officialSearch(true)).not.toContain(w.machine);
    expect(await officialSearch(null)).toContain(w.machine);
    const any = await run(['search', 'offers', 'geolocation=NO verified=any', '--raw'], w.renterKey);
    expect(any.code, any.stderr).toBe(0);
    const found = (JSON.parse(any.stdout) as { offers: { machine_id: number; geolocation: string }[] })
      .offers;
    expect(found.find((o) => o.machine_id === w.machine)?.geolocation).toBe('Oslo, NO');
    const dflt = await run(['search', 'offers', 'geolocation=NO', '--raw'], w.renterKey);
    expect(
      (JSON.parse(dflt.stdout) as { offers: { machine_id: number }[] }).offers.map((o) => o.machine_id),
    ).not.toContain(w.machine);
    const v = await runCli([
      'admin',
      'verify-machine',
      '--data',
      w.data,
      '--id',
      String(w.machine),
      '--json',
    ]);
    expect(v.code, v.stderr).toBe(0);
    expect(await officialSearch(true)).toContain(w.machine);
    const shown = await run(['show', 'machines'], w.hostKey);
    expect(shown.stdout).not.toContain('To be visible');
  });

  it("with --public-host 127.0.0.2 the instance's SSH server listens there, not on 127.0.0.1", async () => {
    const offers = JSON.parse(
      (await run(['search', 'offers', 'verified=any', '--raw'], w.renterKey)).stdout,
    ) as {
      offers: { id: number; machine_id: number }[];
    };
    const offer = offers.offers.find((o) => o.machine_id === w.machine)!;
    const c = await run(
      [
        'create',
        'instance',
        String(offer.id),
        '--image',
        'ubuntu:22.04',
        '--disk',
        '1',
        '--wait',
        '--timeout',
        '60',
      ],
      w.renterKey,
    );
    expect(c.code, c.stderr).toBe(0);
    const id = Number(/Created instance (\d+)/.exec(c.stdout)![1]);
    const inst = JSON.parse((await run(['show', 'instance', String(id), '--raw'], w.renterKey)).stdout) as {
      instances: { ssh_host: string; ssh_port: number };
    };
    expect(inst.instances.ssh_host).toBe('127.0.0.2');
    expect(await connects('127.0.0.2', inst.instances.ssh_port)).toBe(true);
    expect(await connects('127.0.0.1', inst.instances.ssh_port)).toBe(false);
  });
});
