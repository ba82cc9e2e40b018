// openrig volumes … against a live server: a host offers disk, a renter searches it, makes a
// volume, sees it, deletes it; the host withdraws the offer. Each command's output is checked,
// and each change by a read of the server.
import { Command } from 'commander';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { agentMachine } from '../../../test/helpers/market.js';
import { registerVolumeCommands } from './volumes.js';

describeEachDb('openrig volumes', (dialect) => {
  const t = useTestApp(dialect);
  let url = '';
  let host: { apiKey: string };
  let u: { apiKey: string };
  let machine: number;

  beforeAll(async () => {
    await t().app.listen({ port: 0, host: '127.0.0.1' });
    url = `http://127.0.0.1:${(t().app.server.address() as { port: number }).port}`;
    host = await t().user();
    u = await t().user();
    const reg = await t().request('POST', '/api/agent/v1/register', {
      key: host.apiKey,
      body: { agent_uid: 'agent-cli-volumes-02', machines: [agentMachine(0)], price_gpu: 0.4 },
    });
    machine = reg.body.machines[0].machine_id;
  });
  afterAll(() => vi.restoreAllMocks());

  /** Runs `openrig volumes ARGS…` in process; its standard output. */
  const run = async (key: string, ...args: string[]): Promise<string> => {
    const program = new Command().exitOverride();
    registerVolumeCommands(program.command('volumes'));
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
      out += String(s);
      return true;
    });
    const errSpy = vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
      out += String(s);
      return true;
    });
    try {
      await program.parseAsync(['volumes', ...args, '--url', url, '--api-key', key], { from: 'user' });
    } finally {
      spy.mockRestore();
      errSpy.mockRestore();
    }
    return out;
  };

  it('offers, searches, creates, shows and deletes volumes, then withdraws the offer', async () => {
    expect(await run(host.apiKey, 'offer', String(machine), '-s', '60', '-p', '0.2')).toMatch(
      /60 GB on machine/,
    );
    const found = await run(u.apiKey, 'search', 'disk_space>=10');
    expect(found).toMatch(new RegExp(`\\n\\d+ +${machine} +60 +0\\.200`));
    const offerId = JSON.parse(await run(u.apiKey, 'search', `machine_id=${machine}`, '--raw')).offers[0].id;
    expect(await run(u.apiKey, 'create', String(offerId), '-s', '25', '-n', 'ckpt')).toMatch(
      /Created volume \d+/,
    );
    const shown = await run(u.apiKey, 'show');
    expect(shown).toMatch(/ckpt +25 +/);
    const vols = (await t().request('GET', '/api/v0/volumes?owner=me', { key: u.apiKey })).body.volumes;
    expect(vols).toMatchObject([{ label: 'ckpt', disk_space: 25 }]);
    expect(await run(u.apiKey, 'delete', String(vols[0].id))).toMatch(/Deleted volume/);
    expect(await run(u.apiKey, 'show')).toBe('No volumes\n');
    expect(await run(host.apiKey, 'unoffer', String(offerId))).toMatch(/Unlisted volume offer/);
    expect(await run(u.apiKey, 'search')).toBe('No volume offers\n');
  });
});
