// Requests a client makes of an instance's host, carried out by its agent on its next sync:
// logs, an allow-listed command, reboot (restart, disk kept), recycle (pull the image again and
// recreate the container; contract and billing unchanged). Logs and command answer a result URL:
// an unguessable token (stored hashed) readable with no key until it expires, 404 until the agent
// sent the output. Each refuses, naming the state, where the instance's state does not allow it.
import { randomBytes } from 'node:crypto';
import type { Deps } from '../../deps.js';
import type { AuthContext } from '../../http/auth.js';
import { sha256Hex } from '../../crypto.js';
import { stateName, type ActualStatus } from '../../../contract/instance-states.js';
import * as repo from './instances.repo.js';
import { InstanceErrors } from './instances.errors.js';

/** How long a request waits for its agent and its result stays readable. */
export const REQUEST_TTL_MS = 30 * 60_000;
export const RESULTS_PATH = '/api/v0/instances/results';

type Kind = 'logs' | 'command' | 'reboot' | 'recycle';

/** Where each kind may be asked: logs wherever the host still has the container; the rest running. */
const ALLOWED: Record<Kind, ActualStatus[]> = {
  logs: ['running', 'loading', 'exited', 'stopped'],
  command: ['running'],
  reboot: ['running'],
  recycle: ['running'],
};

const COMMANDS: Record<string, RegExp> = {
  ls: /^-[lahRtrS1dF]+$/,
  du: /^-[shacdxk]+$|^--max-depth=\d{1,2}$/,
  rm: /^-[rfRd]+$/,
};

/** `ls`, `du` or `rm` with their common options and paths; no shell syntax. Null when refused. */
export function parseAllowedCommand(command: string): string[] | null {
  if (command.length > 1000 || /[;&|`$<>(){}\\'"*?\n\r\0~]/.test(command)) return null;
  const argv = command.trim().split(/\s+/);
  const opts = COMMANDS[argv[0] ?? ''];
  if (!opts || argv.length > 32) return null;
  for (const a of argv.slice(1)) {
    if (a.startsWith('-') ? !opts.test(a) : !/^[A-Za-z0-9._/+=@:,-]+$/.test(a)) return null;
  }
  const paths = argv.slice(1).filter((a) => !a.startsWith('-'));
  if (paths.some((a) => a.split('/').includes('..'))) return null;
  if (argv[0] === 'rm' && paths.some((a) => /^[/.]+$/.test(a))) return null;
  return argv;
}

async function liveOwnInstance(deps: Deps, auth: AuthContext, id: number, kind: Kind) {
  const row = await repo.ownInstanceRow(deps.db, auth.user.id, id);
  if (!row || row.destroyed_at !== null) throw InstanceErrors.notFound(`No such instance: ${id}`);
  const a = row.actual_status as ActualStatus;
  if (!ALLOWED[kind].includes(a))
    throw InstanceErrors.invalidState(
      `Cannot ${kind === 'logs' ? 'read the logs of' : kind} an instance in state ${stateName(a)}`,
    );
  return row;
}

async function enqueue(
  deps: Deps,
  auth: AuthContext,
  id: number,
  kind: Kind,
  args: Record<string, unknown>,
  origin: string | null,
): Promise<string | null> {
  const token = origin !== null ? randomBytes(24).toString('base64url') : null;
  await repo.insertInstanceRequest(deps.db, {
    instanceId: id,
    userId: auth.user.id,
    kind,
    args: JSON.stringify(args),
    tokenHash: token ? sha256Hex(token) : null,
    now: deps.clock.now(),
    ttlMs: REQUEST_TTL_MS,
  });
  return token ? `${origin}${RESULTS_PATH}/${token}/` : null;
}

export async function requestLogs(
  deps: Deps,
  auth: AuthContext,
  id: number,
  body: { tail?: string | number; filter?: string; daemon_logs?: unknown },
  origin: string,
): Promise<{ success: boolean; msg: string; result_url: string }> {
  await liveOwnInstance(deps, auth, id, 'logs');
  const tailRaw = body.tail === undefined || body.tail === '' ? null : Number(body.tail);
  if (tailRaw !== null && (!Number.isInteger(tailRaw) || tailRaw < 0 || tailRaw > 100_000))
    throw InstanceErrors.badRequest('tail must be a whole number of lines from 0 to 100000');
  const filter = body.filter ? String(body.filter) : null;
  const url = await enqueue(deps, auth, id, 'logs', { tail: tailRaw, filter }, origin);
  return {
    success: true,
    msg: 'Logs requested; the result URL answers once the host sent them',
    result_url: url!,
  };
}

export async function requestCommand(
  deps: Deps,
  auth: AuthContext,
  id: number,
  command: string,
  origin: string,
): Promise<{ success: boolean; result_url: string; writeable_path: string }> {
  const argv = parseAllowedCommand(command);
  if (!argv)
    throw InstanceErrors.badRequest(
      'command must be ls, du or rm with their usual options and plain paths (no shell syntax)',
    );
  await liveOwnInstance(deps, auth, id, 'command');
  const url = await enqueue(deps, auth, id, 'command', { argv }, origin);
  // The official client strips writeable_path from the output it prints, and fails without it.
  return { success: true, result_url: url!, writeable_path: '' };
}

export async function requestRestart(
  deps: Deps,
  auth: AuthContext,
  id: number,
  kind: 'reboot' | 'recycle',
): Promise<{ success: boolean }> {
  await liveOwnInstance(deps, auth, id, kind);
  await enqueue(deps, auth, id, kind, {}, null);
  return { success: true };
}

/** The text at a result URL; null (404) until the agent answered, and after it expired. */
export async function readResult(deps: Deps, token: string): Promise<string | null> {
  if (!/^[A-Za-z0-9_-]{20,64}$/.test(token)) return null;
  const r = await repo.requestResultByToken(deps.db, sha256Hex(token), deps.clock.now());
  return r && r.done_at !== null ? (r.result ?? '') : null;
}
