// `openrig serve --demo`: a demo user with
// an API key (the same one across restarts) and a generated SSH key pair, and a demo fleet: several hosts whose agents run
// in this process and speak the same protocol as `openrig agent`, over loopback, with the process
// runtime. Prints the base URL, the key and an example to paste: search, create, poll, ssh.
import { accessSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ed25519KeyPair } from '../contract/ssh-keygen.js';
import {
  createUser,
  findUserByEmail,
  insertApiKey,
  revokeDemoKeys,
} from './modules/accounts/accounts.service.js';
import { tx } from './db/connection.js';
import { addSshKey, replaceSshKey } from './modules/ssh-keys/ssh-keys.service.js';
import { resolveCredential } from './http/auth.js';
import { setMachinesOffline } from './modules/agent-gateway/agent-gateway.heartbeats.js';
import { sweepMachineInstances } from './modules/instances/instances.moves.js';
import { Agent } from '../agent/daemon.js';
import { describeMachines, parseGpusFlag } from '../agent/hardware.js';
import { ProcessRuntime } from '../agent/runtime-process.js';
import type { Server } from './main.js';
import { packageRoot } from '../contract/package-root.js';

export const DEMO_EMAIL = 'demo@openrig.local';

/** The fleet: hosts, each with agents of one GPU model; prices are $/hour per GPU. */
const FLEET = [
  { host: 'alpha', gpus: 'RTX 4090x2', machines: 2, price: 0.4, geo: 'Oslo, NO' },
  { host: 'alpha', gpus: 'RTX 3090x1', machines: 2, price: 0.18, geo: 'Oslo, NO' },
  { host: 'beta', gpus: 'A100 SXM4x4', machines: 1, price: 1.1, geo: 'Frankfurt, DE' },
  { host: 'beta', gpus: 'RTX A6000x2', machines: 1, price: 0.45, geo: 'Frankfurt, DE' },
  { host: 'gamma', gpus: 'H100 SXMx8', machines: 1, price: 2.4, geo: 'Montreal, CA' },
] as const;

/**
 * The demo keys, kept in DATA/demo/keys.json (mode 0600, beside the data directory's secret key)
 * so that a restart prints the same key instead of minting another and leaving the old ones
 * valid. Keys are stored as hashes in the database, so this file is the only way to show one
 * again; it is written for the demo only.
 */
function keysFile(server: Pick<Server, 'deps'>): string {
  return path.join(server.deps.config.dataDir, 'demo', 'keys.json');
}

function readKeys(file: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch {
    return {};
  }
}

async function ensureUser(
  server: Pick<Server, 'deps'>,
  email: string,
  fullName: string,
  balanceUsd: number,
): Promise<{ id: number; apiKey: string }> {
  const { deps } = server;
  const file = keysFile(server);
  const keys = readKeys(file);
  const existing = await findUserByEmail(deps.db, email);
  if (existing) {
    const stored = keys[email];
    const auth = stored ? await resolveCredential(deps, stored) : null;
    // The stored key still works for this user: reuse it.
    if (stored && auth?.user.id === existing.id && auth.via === 'api_key')
      return { id: existing.id, apiKey: stored };
    // Otherwise one new key, and the demo keys of earlier starts stop working.
    const now = deps.clock.now();
    const k = await tx(deps.store, async (db) => {
      await revokeDemoKeys(db, existing.id, now);
      return insertApiKey(db, { userId: existing.id, teamId: null, name: 'demo', permissions: null, now });
    });
    saveKey(file, keys, email, k.key);
    return { id: existing.id, apiKey: k.key };
  }
  const u = await createUser(deps, {
    email,
    password: 'demo-password',
    fullName,
    emailVerified: true,
    balanceUsd,
  });
  saveKey(file, keys, email, u.api_key);
  return { id: u.id, apiKey: u.api_key };
}

function saveKey(file: string, keys: Record<string, string>, email: string, key: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, JSON.stringify({ ...keys, [email]: key }, null, 2) + '\n', { mode: 0o600 });
}

export async function ensureDemoUser(server: Pick<Server, 'deps'>): Promise<{ id: number; apiKey: string }> {
  return ensureUser(server, DEMO_EMAIL, 'Demo User', 100);
}

/**
 * The demo user's SSH key pair in DATA/demo/ (kept across restarts), registered on the account
 * with the private key's path as its comment: the console shows that key's SSH command with `-i`
 * and that path, so it runs as copied.
 */
async function ensureDemoSshKey(server: Server, apiKey: string): Promise<string> {
  const dir = path.join(server.deps.config.dataDir, 'demo');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const priv = path.join(dir, 'id_ed25519');
  if (!existsSync(priv)) {
    const kp = ed25519KeyPair(DEMO_EMAIL);
    writeFileSync(priv, kp.private, { mode: 0o600 });
    writeFileSync(`${priv}.pub`, kp.public + '\n', { mode: 0o644 });
  }
  const auth = await resolveCredential(server.deps, apiKey);
  if (auth) {
    const [type, body] = readFileSync(`${priv}.pub`, 'utf8').trim().split(/\s+/);
    const line = `${type} ${body} ${priv}`;
    const key = await addSshKey(server.deps, auth, line);
    // A key registered by an older demo keeps its e-mail comment: it is given the path too.
    if (key.comment !== priv) await replaceSshKey(server.deps, auth, key.id, line);
  }
  return priv;
}

async function startFleet(server: Server): Promise<number> {
  const { deps } = server;
  const hosts = new Map<string, { id: number; apiKey: string }>();
  let machines = 0;
  for (const [i, f] of FLEET.entries()) {
    if (!hosts.has(f.host))
      hosts.set(f.host, await ensureUser(server, `host-${f.host}@openrig.local`, `Host ${f.host}`, 0));
    const host = hosts.get(f.host)!;
    const stateDir = path.join(deps.config.dataDir, 'demo', 'agents', `${f.host}-${i}`);
    const gpu = parseGpusFlag(f.gpus);
    if ('error' in gpu) throw new Error(gpu.error);
    let agent: Agent | null = null;
    const runtime = new ProcessRuntime({ stateDir, sshBind: '127.0.0.1', onExit: () => agent?.poke() });
    agent = new Agent({
      server: server.url,
      apiKey: host.apiKey,
      stateDir,
      machines: describeMachines(gpu, f.machines, stateDir),
      priceGpu: f.price,
      priceDisk: 0.1,
      runtime,
      // Quicker than the server's default, so a new instance starts within a couple of seconds.
      heartbeatS: Math.min(2, deps.config.agent.heartbeatS),
      version: 'demo',
      log: {
        info: (m) => deps.log.info({ agent: `${f.host}-${i}` }, m),
        warn: (m) => deps.log.warn({ agent: `${f.host}-${i}` }, m),
        error: (m) => deps.log.error({ agent: `${f.host}-${i}` }, m),
      },
    });
    await agent.start();
    machines += agent.machineIds.length;
    // The operator vouches for the demo machines: verified, reliable, placed.
    await deps.db
      .updateTable('machines')
      .set({
        verified: 1,
        reliability: 0.99,
        geolocation: f.geo,
        inet_up: 800 + 100 * i,
        inet_down: 900 + 150 * i,
      })
      .where('id', 'in', agent.machineIds)
      .execute();
    const a = agent;
    // On SIGTERM the HTTP server closes before the jobs stop, so the demo agents stop their
    // instances and take their machines offline directly in the database.
    deps.jobs.push({
      async stop() {
        await a.shutdown({ stopInstances: true, notify: false });
        const ids = await setMachinesOffline(deps.db, host.id, a.uid, a.machineIds);
        for (const id of ids) await sweepMachineInstances(deps, id, 'offline');
      },
    });
  }
  return machines;
}

/** True when `name` is an executable file in a directory of PATH. */
function onPath(name: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/**
 * How the banner names the command line so that what it prints runs as printed: `openrig` when
 * it is on PATH (installed, or `npm link`ed), otherwise this package's bin/openrig.js by its full
 * path, quoted for a POSIX shell when it needs to be.
 */
export function cliCommand(): { command: string; onPath: boolean } {
  if (onPath('openrig')) return { command: 'openrig', onPath: true };
  const bin = path.join(packageRoot(), 'bin', 'openrig.js');
  const quoted = /^[\w./@%+=:,-]+$/.test(bin) ? bin : `'${bin.replace(/'/g, `'\\''`)}'`;
  return { command: quoted, onPath: false };
}

export async function startDemo(server: Server): Promise<void> {
  const user = await ensureDemoUser(server);
  const keyFile = await ensureDemoSshKey(server, user.apiKey);
  const machines = await startFleet(server);
  const u = server.url;
  const host = server.deps.config.publicHost;
  const cli = cliCommand();
  const json = (expr: string) =>
    `node -pe 'const j = JSON.parse(require("fs").readFileSync(0, "utf8")); ${expr}'`;
  const lines = [
    `openrig is running at ${u}`,
    `web console: ${u}/ (sign in as ${DEMO_EMAIL}, password demo-password)`,
    `demo user: ${DEMO_EMAIL} (password demo-password)`,
    `demo API key: ${user.apiKey}`,
    `demo fleet: ${machines} machines of 3 hosts (RTX 4090, RTX 3090, A100, RTX A6000, H100), agents over loopback`,
    'demo runtime: process (a fresh laptop has no Docker engine): instances are plain processes of this user with no isolation; real hosts run `openrig agent` with the Docker runtime (docs/agent.md)',
    `demo SSH key: ${keyFile} (registered on the demo account)`,
    // Nothing silent: where the codes and notices go when no provider is configured.
    server.deps.config.mail.outboxFile
      ? `e-mail: no SMTP server configured; every e-mail (2FA codes, maintenance notices) is written to ${server.deps.config.mail.outboxFile}`
      : 'e-mail: sent through the configured SMTP server',
    server.deps.config.sms.provider === 'outbox'
      ? `SMS: no SMS provider configured; every text message (2FA codes) is written to ${server.deps.config.sms.outboxFile}`
      : 'SMS: sent through the configured SMS provider',
    `CLI: ${cli.command} login --url ${u} --api-key ${user.apiKey}   (then: ${cli.command} ssh ID works with the demo key from this directory)`,
    ...(cli.onPath
      ? []
      : [
          `     (openrig is not on PATH: \`npm link\` in ${packageRoot()} puts it there, then \`openrig\` works in place of ${cli.command})`,
        ]),
    '',
    'Try:',
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" ${u}/api/v0/users/current/`,
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" -H "Content-Type: application/json" -d '{"limit": 5}' ${u}/api/v0/bundles/`,
    `  curl -s -H "Authorization: Bearer ${user.apiKey}" ${u}/api/v0/instances/`,
    '',
    'Rent a GPU and log into it (paste into a shell):',
    `  URL=${u}; KEY=${user.apiKey}`,
    `  OFFER=$(curl -s -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" -d '{"gpu_name": {"eq": "RTX 4090"}, "rentable": {"eq": true}, "order": [["dph_total", "asc"]], "limit": 1}' $URL/api/v0/bundles/ | ${json('j.offers[0].id')})`,
    `  ID=$(curl -s -X PUT -H "Authorization: Bearer $KEY" -H "Content-Type: application/json" -d '{"image": "ubuntu:22.04", "disk": 10, "onstart": "echo started > hello.txt"}' $URL/api/v0/asks/$OFFER/ | ${json('j.new_contract')})`,
    `  until curl -s -H "Authorization: Bearer $KEY" $URL/api/v0/instances/$ID/ | ${json('j.instances.actual_status')} | grep -qx running; do sleep 1; done`,
    `  PORT=$(curl -s -H "Authorization: Bearer $KEY" $URL/api/v0/instances/$ID/ | ${json('j.instances.ssh_port')})`,
    `  ssh -i ${keyFile} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -p $PORT root@${host} 'cat hello.txt; nproc'`,
    `  curl -s -X DELETE -H "Authorization: Bearer $KEY" $URL/api/v0/instances/$ID/`,
    '',
  ];
  process.stdout.write(lines.join('\n') + '\n');
}
