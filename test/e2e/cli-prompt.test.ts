// The prompts for a secret in a real pseudo-terminal (`script`): `create env-var NAME` asks for the
// value and `login --email` for the password; what is typed never reaches the screen, reaches the
// server exactly as typed (spaces kept), and Ctrl-C ends the command with exit 130.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from '../helpers/process.js';
import { cli, createUser, hasCommand, makeHome, startWorld, type CliWorld } from './cli-harness.js';

const hasScript = hasCommand('script', ['--version']);
if (!hasScript)
  console.warn('[openrig tests] `script` (util-linux) is missing: the prompt cases are skipped');

const PASSWORD = '  padded pass phrase  ';
let w: CliWorld;
let key: string;
const EMAIL = 'cli-prompt@example.com';

beforeAll(async () => {
  w = await startWorld({ OPENRIG_SECRET_KEY: '6b'.repeat(32) });
  key = (await createUser(w, EMAIL, ['--password', PASSWORD])).api_key;
}, 90_000);
afterAll(() => w?.stop());

/**
 * Runs the CLI in a pseudo-terminal; once `prompt` shows, types `keys`. Resolves to the exit code
 * and everything the terminal showed.
 */
function typeAtPrompt(
  home: string,
  args: string[],
  prompt: string,
  keys: string,
  env: Record<string, string> = {},
): Promise<{ code: number; screen: string }> {
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', `${process.execPath} ${BIN} ${quoted}`, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, HOME: home, XDG_CONFIG_HOME: '', OPENRIG_URL: '', OPENRIG_API_KEY: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    let typed = false;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no prompt "${prompt}" within 20 s; the terminal showed: ${JSON.stringify(screen)}`));
    }, 20_000);
    const seen = (d: Buffer) => {
      screen += d.toString();
      if (!typed && screen.includes(prompt)) {
        typed = true;
        child.stdin.write(keys);
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code: code ?? -1, screen });
    });
  });
}

describe.runIf(hasScript)('prompts for a secret on a terminal', { timeout: 60_000 }, () => {
  const settings = () => ({ OPENRIG_URL: w.url, OPENRIG_API_KEY: key });

  it('create env-var NAME: the value typed is not shown and reaches the server as typed', async () => {
    const home = makeHome();
    // A mistyped last character, deleted with Backspace, and spaces that are part of the value.
    const r = await typeAtPrompt(
      home,
      ['create', 'env-var', 'ECHOTEST'],
      'Value of ECHOTEST: ',
      ' SUPERSECRETx\u007f \r',
      settings(),
    );
    expect(r.code, r.screen).toBe(0);
    expect(r.screen).toContain('ECHOTEST');
    expect(r.screen).not.toContain('SUPERSECRET');
    expect(r.screen).not.toMatch(/SUPER|CRET/);
    const shown = await cli(home, ['show', 'env-vars', '--show-values', '--raw'], settings());
    expect((JSON.parse(shown.stdout) as { secrets: Record<string, string> }).secrets.ECHOTEST).toBe(
      ' SUPERSECRET ',
    );
  });

  it('Ctrl-C at the prompt ends the command with exit 130 and sends nothing', async () => {
    const home = makeHome();
    const r = await typeAtPrompt(
      home,
      ['create', 'env-var', 'INTERRUPTED'],
      'Value of INTERRUPTED: ',
      'abc\u0003',
      settings(),
    );
    expect(r.code, r.screen).toBe(130);
    expect(r.screen).not.toContain('abc');
    const shown = await cli(home, ['show', 'env-vars', '--raw'], settings());
    expect(shown.stdout).not.toContain('INTERRUPTED');
  });

  it('login --email: the password is not shown, keeps its spaces, and the stored key works', async () => {
    const home = makeHome();
    const r = await typeAtPrompt(
      home,
      ['login', '--url', w.url, '--email', EMAIL],
      'Password: ',
      `${PASSWORD}\r`,
    );
    expect(r.code, r.screen).toBe(0);
    expect(r.screen).toContain(`Logged in to ${w.url} as ${EMAIL}`);
    expect(r.screen).not.toContain('padded');
    expect(r.screen).not.toContain('phrase');
    const stored = JSON.parse(readFileSync(path.join(home, '.config', 'openrig', 'config.json'), 'utf8')) as {
      api_key: string;
    };
    expect(stored.api_key).not.toBe(key);
    const me = await cli(home, ['show', 'user']);
    expect(me.code, me.stderr).toBe(0);
    expect(me.stdout).toContain(EMAIL);
  });
});
