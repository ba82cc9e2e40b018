// Names and labels are plain one-line text: a control character in any stored name or label is a
// 400 naming the field, with nothing written; and host-supplied names reach renters' e-mails only
// in marked, quoted fields.
import { expect, it } from 'vitest';
import { describeEachDb } from '../../../test/helpers/db.js';
import { useTestApp } from '../../../test/helpers/app.js';
import { renter } from '../../../test/helpers/market.js';
import {
  maintenanceCancelledEmail,
  maintenanceClientEmail,
} from '../modules/maintenance/maintenance.mail.js';
import { enableTotp } from '../modules/two-factor/two-factor.testkit.js';
import { agentMachine } from '../../../test/helpers/market.js';

const P = '/api/agent/v1';
const FORGED = 'RTX 4090\n\nURGENT: your account is suspended, see http://evil.example/login';

const machine = (over: Record<string, unknown> = {}) => agentMachine(0, over);

it('host-supplied names appear only quoted in a marked field, never as lines of their own', () => {
  const w = { start: Date.UTC(2030, 0, 1), end: Date.UTC(2030, 0, 1, 2), durationHours: 2, category: 'gpu' };
  for (const render of [maintenanceClientEmail, maintenanceCancelledEmail]) {
    const m = render({
      machine: { id: 7, gpu_name: FORGED, num_gpus: 1, hostname: 'h\nURGENT: click http://x' },
      window: w,
      instanceIds: [1],
      name: 'Ada',
    });
    expect(m.subject).not.toContain('URGENT');
    const lines = m.text.split('\n');
    expect(lines.filter((l) => l.includes('URGENT')).every((l) => /^\s+(GPU|Host name): /.test(l))).toBe(
      true,
    );
    expect(lines.some((l) => l.trimStart().startsWith('URGENT'))).toBe(false);
    expect(m.text).toContain('As named by the host');
    expect(m.html).not.toContain('\nURGENT');
  }
});

describeEachDb('control characters in names and labels', (dialect) => {
  const t = useTestApp(dialect);

  it('agent registration refuses them in every machine name field, naming it, and registers nothing', async () => {
    const host = await t().user();
    for (const [field, value] of [
      ['gpu_name', FORGED],
      ['hostname', 'h0\r\nX-Evil: 1'],
      ['cpu_name', 'Xeon\u0007'],
      ['driver_version', '550\u2028'],
    ] as const) {
      const r = await t().request('POST', `${P}/register`, {
        key: host.apiKey,
        body: { agent_uid: 'agent-ctl-00001', machines: [machine({ [field]: value })] },
      });
      expect(r.status, field).toBe(400);
      expect(r.body.error).toBe('bad_request');
      expect(r.body.msg).toContain(field);
      expect(r.body.msg).toContain('control characters');
    }
    const rows = await t()
      .deps.db.selectFrom('machines')
      .select('id')
      .where('host_id', '=', host.id)
      .execute();
    expect(rows).toEqual([]);
    // Plain names, spaces and non-Latin letters included, are fine.
    const ok = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-ctl-00001', machines: [machine({ hostname: 'rack 3 – Zürich' })] },
    });
    expect(ok.status).toBe(200);
  });

  it('instance labels and images, API key names and 2FA labels refuse them too', async () => {
    const u = await renter(t());
    const host = await t().user();
    const reg = await t().request('POST', `${P}/register`, {
      key: host.apiKey,
      body: { agent_uid: 'agent-ctl-00002', machines: [machine()], price_gpu: 0.4 },
    });
    const mid = reg.body.machines[0].machine_id as number;
    const badCreate = await t().request('PUT', `/api/v0/asks/${mid}/`, {
      key: u.apiKey,
      body: { image: 'x', label: 'job\nURGENT' },
    });
    expect(badCreate.status).toBe(400);
    expect(badCreate.body.msg).toContain('label');
    const badImage = await t().request('PUT', `/api/v0/asks/${mid}/`, {
      key: u.apiKey,
      body: { image: 'x\n' },
    });
    expect(badImage.status).toBe(400);
    expect(badImage.body.msg).toContain('image');
    const created = await t().request('PUT', `/api/v0/asks/${mid}/`, { key: u.apiKey, body: { image: 'x' } });
    const id = created.body.new_contract as number;
    const relabel = await t().request('PUT', `/api/v0/instances/${id}/`, {
      key: u.apiKey,
      body: { label: 'a\tb' },
    });
    expect(relabel.status).toBe(400);
    expect(relabel.body.msg).toContain('label');
    const row = await t()
      .deps.db.selectFrom('instances')
      .select('label')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.label).toBe('');

    const key = await t().request('POST', '/api/v0/auth/apikeys/', {
      key: u.apiKey,
      body: { name: 'ci\nadmin' },
    });
    expect(key.status).toBe(400);
    expect(key.body.msg).toContain('name');

    await enableTotp(t(), u.apiKey, u.email);
    const upd = await t().request('PUT', '/api/v0/tfa/update/', {
      key: u.apiKey,
      body: { tfa_method: 'totp', label: 'phone\u001b[31m' },
    });
    expect(upd.status).toBe(400);
    expect(upd.body.msg).toContain('label');
  });
  it('invisible format characters (bidi overrides and isolates, zero-width marks, BOM) get the same 400', async () => {
    const u = await renter(t());
    const FORMAT = [
      '\u202E', // right-to-left override
      '\u202A',
      '\u2066', // left-to-right isolate
      '\u2069',
      '\u200B', // zero-width space
      '\u200D', // a zero-width joiner that joins no emoji
      '\u200F',
      '\uFEFF',
      '\u2060',
      '\u2064',
      '\u00AD', // soft hyphen
      '\u061C', // Arabic letter mark
      '\u{E0041}', // a tag character
    ];
    for (const c of FORMAT) {
      const name = `cat${c}gpj.exe`;
      const where = JSON.stringify(c);
      const key = await t().request('POST', '/api/v0/auth/apikeys/', { key: u.apiKey, body: { name } });
      expect([key.status, key.body.error], where).toEqual([400, 'bad_request']);
      expect(key.body.msg, where).toContain('name must not contain control characters');
      const reg = await t().request('POST', `${P}/register`, {
        key: u.apiKey,
        body: { agent_uid: 'agent-ctl-00003', machines: [machine({ hostname: name })] },
      });
      expect([reg.status, reg.body.msg], where).toEqual([400, expect.stringContaining('hostname')]);
      const settings = await t().request('PUT', '/api/v0/users/', {
        key: u.apiKey,
        body: { fullname: name },
      });
      expect([settings.status, settings.body.msg], where).toEqual([400, expect.stringContaining('fullname')]);
    }
    const keys = await t().deps.db.selectFrom('api_keys').select('id').where('user_id', '=', u.id).execute();
    expect(keys).toHaveLength(1);
    const machines = await t()
      .deps.db.selectFrom('machines')
      .select('id')
      .where('host_id', '=', u.id)
      .execute();
    expect(machines).toEqual([]);
    // Emoji joined into one picture keep their joiner; right-to-left letters are text, not marks.
    for (const name of ['\u{1F469}\u200D\u{1F4BB} box', 'שרת 3', 'rack 3 – Zürich']) {
      const ok = await t().request('POST', '/api/v0/auth/apikeys/', { key: u.apiKey, body: { name } });
      expect(ok.status, name).toBe(200);
    }
    const names = await t()
      .deps.db.selectFrom('api_keys')
      .select('name')
      .where('user_id', '=', u.id)
      .orderBy('id')
      .execute();
    expect(names.slice(1).map((r) => r.name)).toEqual([
      '\u{1F469}\u200D\u{1F4BB} box',
      'שרת 3',
      'rack 3 – Zürich',
    ]);
  });
});
