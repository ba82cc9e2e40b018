// The `openrig tfa …` commands against a real server (issue 6): authorize by e-mail, add an
// authenticator app, log in with a backup code (the session_key is stored and used), regenerate
// codes, remove the method. The TOTP codes are computed here as an authenticator app would.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { cli, createUser, makeHome, startWorld, type CliWorld } from './cli-harness.js';
import { waitFor } from '../helpers/process.js';
import { totpAt } from '../../src/server/modules/two-factor/two-factor.codes.js';

describe('openrig tfa, end to end', () => {
  let w: CliWorld;
  let mail: string;
  beforeAll(async () => {
    mail = path.join(process.env.TMPDIR ?? '/tmp', `openrig-tfa-cli-mail-${process.pid}.jsonl`);
    w = await startWorld({ OPENRIG_MAIL_OUTBOX: mail, OPENRIG_SECRET_KEY: 'ab'.repeat(32) });
  });
  afterAll(() => {
    w?.stop();
    rmSync(mail, { force: true });
  });

  const mailCode = (to: string, after: number) =>
    waitFor(() => {
      const mine = existsSync(mail)
        ? readFileSync(mail, 'utf8')
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
            .filter((m) => m.to === to && /\b\d{6}\b/.test(m.text))
        : [];
      return mine.length > after ? /\b(\d{6})\b/.exec(mine.at(-1).text)![1] : null;
    }, `a code e-mail to ${to}`);

  it('adds an authenticator app, logs in with a backup code, regenerates codes and removes the method', async () => {
    const email = 'tfa-cli@example.com';
    const u = await createUser(w, email);
    const home = makeHome();
    const run = async (...args: string[]) => {
      const r = await cli(home, args);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r.stdout;
    };
    await run('login', '--url', w.url, '--api-key', u.api_key);

    const step1 = JSON.parse(await run('tfa', 'auth-new', '--raw'));
    expect(step1.secret).toEqual(expect.any(String));
    await run('tfa', 'auth-new', await mailCode(email, 0), '--secret', step1.secret);

    const setup = JSON.parse(await run('tfa', 'totp-setup', '--raw'));
    const added = JSON.parse(
      await run(
        'tfa',
        'activate',
        totpAt(setup.secret, Date.now()),
        '--secret',
        setup.secret,
        '--label',
        'phone',
        '--raw',
      ),
    );
    expect(added.backup_codes).toHaveLength(10);

    const status = JSON.parse(await run('tfa', 'status', '--raw'));
    expect(status).toMatchObject({
      tfa_enabled: true,
      backup_codes_remaining: 10,
      methods: [{ method: 'totp', label: 'phone', is_primary: true }],
    });

    const login = await run('tfa', 'login', '--backup-code', added.backup_codes[0]);
    expect(login).toContain('9 backup codes left');
    // Later commands ride the stored session.
    expect(JSON.parse(await run('show', 'user', '--raw')).api_key).toMatch(/^ors_/);

    const regen = JSON.parse(
      await run('tfa', 'regen-codes', '--backup-code', added.backup_codes[1], '--raw'),
    );
    expect(regen.backup_codes).toHaveLength(10);
    expect(regen.backup_codes).not.toContain(added.backup_codes[2]);

    const bad = await cli(home, [
      'tfa',
      'delete',
      '--backup-code',
      added.backup_codes[2],
      '--target-id',
      String(status.methods[0].id),
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr + bad.stdout).toMatch(/invalid|already used/i);

    const del = await run(
      'tfa',
      'delete',
      '--backup-code',
      regen.backup_codes[0],
      '--target-id',
      String(status.methods[0].id),
    );
    expect(del).toContain('2FA Successfully Disabled');
    expect(JSON.parse(await run('tfa', 'status', '--raw')).tfa_enabled).toBe(false);
  }, 180_000); // a dozen CLI processes, each a fresh Node start
});
