// Requests a client makes of an instance's host, carried out by its agent on its next sync:
// logs, an allow-listed command, reboot (restart, disk kept), recycle (pull the image again and
// recreate the container; contract kept). Once queued, the agent's held wait is woken, so that
// next sync comes at once (agent-gateway.wake.ts), not at the agent's next heartbeat. Each answers a result URL: an unguessable token (stored
// hashed) readable with no key until it expires, 404 until the agent sent the output (for reboot
// and recycle, when it was done and the container's new start time, or `error: …`). Each refuses,
// naming the state, where the instance's state does not allow it.
import { randomBytes } from 'node:crypto';
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import { sha256Hex } from '../../crypto.js';
import { stateName, type ActualStatus } from '../../../contract/instance-states.js';
import * as repo from './instances.repo.js';
import { settleInstance } from '../billing/billing.service.js';
import { LostRace, txRetry } from '../../db/tx.js';
import { instanceEvent, recordEvent } from '../webhooks/webhooks.events.js';
import { InstanceErrors } from './instances.errors.js';
import { booleanOf } from '../../../contract/text.js';
import { RESULTS_PATH } from '../../../contract/schemas/instances.js';

/** How long a request waits for its agent and its result stays readable. */
export const REQUEST_TTL_MS = 30 * 60_000;
/** Where a request's result is read (its route's contract). */
export { RESULTS_PATH };

type Kind = 'logs' | 'command' | 'reboot' | 'recycle';

/** Where each kind may be asked: logs wherever the host still has the container; the rest running. */
const ALLOWED: Record<Kind, ActualStatus[]> = {
  logs: ['running', 'loading', 'exited', 'stopped'],
  command: ['running'],
  reboot: ['running'],
  recycle: ['running'],
};

/**
 * What each program may be given: single-letter flags (alone or clustered, `-lhr`), at most one
 * flag taking a small number (`du -d N`), and whole long options. None of them names a file to
 * read, follows symbolic links or changes what a path means, so the only paths a command touches
 * are the plain ones it is given. These include every form the official client's help shows
 * (`ls -l -o -r`, `du -d2 -h`, `rm -r home/delete_this.txt`).
 */
interface CommandRule {
  flags: string;
  /** The flag whose value is a number from 0 to 99: attached (`-d2`, `-hd2`) or the next word. */
  numberFlag?: string;
  long?: RegExp;
}

const COMMANDS: Record<string, CommandRule> = {
  ls: { flags: 'lahRtrS1dFognAis' },
  du: { flags: 'shackmx', numberFlag: 'd', long: /^--max-depth=\d{1,2}$/ },
  rm: { flags: 'rfRdv' },
};

/** One word of options, with its number when the number flag ends it; null when refused. */
function parseFlags(rule: CommandRule, word: string): { cluster: string; needsNumber: boolean } | null {
  if (word.startsWith('--')) return rule.long?.test(word) ? { cluster: word, needsNumber: false } : null;
  const body = word.slice(1);
  if (body === '') return null;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === rule.numberFlag) {
      const rest = body.slice(i + 1);
      if (rest === '') return { cluster: word, needsNumber: true };
      return /^\d{1,2}$/.test(rest) ? { cluster: word, needsNumber: false } : null;
    }
    if (!rule.flags.includes(c)) return null;
  }
  return { cluster: word, needsNumber: false };
}

/**
 * `ls`, `du` or `rm` with their common options and plain paths; no shell syntax, no `..`, not
 * `rm` of the root. Null when refused. A number given as its own word (`du -d 2`) is attached to
 * its flag (`-d2`), so every word of the result that does not start with `-` is a path.
 */
export function parseAllowedCommand(command: string): string[] | null {
  if (command.length > 1000 || /[;&|`$<>(){}\\'"*?\n\r\0~]/.test(command)) return null;
  const words = command.trim().split(/\s+/);
  const rule = COMMANDS[words[0] ?? ''];
  if (!rule || words.length > 32) return null;
  const argv = [words[0]!];
  const paths: string[] = [];
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('-')) {
      if (!/^[A-Za-z0-9._/+=@:,-]+$/.test(w)) return null;
      paths.push(w);
      argv.push(w);
      continue;
    }
    const f = parseFlags(rule, w);
    if (!f) return null;
    if (!f.needsNumber) {
      argv.push(f.cluster);
      continue;
    }
    const n = words[++i];
    if (n === undefined || !/^\d{1,2}$/.test(n)) return null;
    argv.push(f.cluster + n);
  }
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
  row: { id: number; machine_id: number },
  kind: Kind,
  args: Record<string, unknown>,
  origin: string,
): Promise<string> {
  const id = row.id;
  const token = randomBytes(24).toString('base64url');
  await repo.insertInstanceRequest(deps.db, {
    instanceId: id,
    userId: auth.user.id,
    kind,
    args: JSON.stringify(args),
    tokenHash: sha256Hex(token),
    now: deps.clock.now(),
    ttlMs: REQUEST_TTL_MS,
  });
  deps.agentWake.notify([row.machine_id]);
  return `${origin}${RESULTS_PATH}/${token}/`;
}

export async function requestLogs(
  deps: Deps,
  auth: AuthContext,
  id: number,
  body: { tail?: string | number; filter?: string; daemon_logs?: unknown },
  origin: string,
): Promise<{ success: boolean; msg: string; result_url: string }> {
  const row = await liveOwnInstance(deps, auth, id, 'logs');
  const tailRaw = body.tail === undefined || body.tail === '' ? null : Number(body.tail);
  if (tailRaw !== null && (!Number.isInteger(tailRaw) || tailRaw < 0 || tailRaw > 100_000))
    throw InstanceErrors.badRequest('tail must be a whole number of lines from 0 to 100000');
  const filter = body.filter ? String(body.filter) : null;
  const daemon =
    body.daemon_logs === undefined || body.daemon_logs === null || body.daemon_logs === ''
      ? false
      : booleanOf(body.daemon_logs);
  if (daemon === null) throw InstanceErrors.badRequest('daemon_logs must be true or false');
  const args = daemon ? { tail: tailRaw, filter, daemon } : { tail: tailRaw, filter };
  const url = await enqueue(deps, auth, row, 'logs', args, origin);
  return {
    success: true,
    msg: 'Logs requested; the result URL answers once the host sent them',
    result_url: url,
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
  const row = await liveOwnInstance(deps, auth, id, 'command');
  const url = await enqueue(deps, auth, row, 'command', { argv }, origin);
  // The official client strips writeable_path from the output it prints, and fails without it.
  return { success: true, result_url: url, writeable_path: '' };
}

const DONE: Record<'reboot' | 'recycle', string> = { reboot: 'rebooted', recycle: 'recycled' };

/** The status_msg an instance shows from the request until its host starts carrying it out. */
export function restartRequestedMsg(kind: 'reboot' | 'recycle'): string {
  return `${kind} requested; waiting for the host to carry it out`;
}

/**
 * Reboot or recycle: the request row and the instance's move from `running` to `loading` are one
 * transaction, so from the moment the client is answered the instance reads as not ready, and it
 * reads `running` again only once its host has carried the request out and reported it running
 * (the agent gateway holds back `running` reports while the request is pending). Compute is not
 * billed meanwhile, as for any instance that is not running. The move is a conditional update:
 * of two racing requests one moves the instance, the other then finds it under way. Asking again
 * for the one under way is a success that says so; the other kind waits for it (409).
 */
export async function requestRestart(
  deps: Deps,
  auth: AuthContext,
  id: number,
  kind: 'reboot' | 'recycle',
  origin: string,
): Promise<{ success: boolean; msg: string; result_url?: string }> {
  const now = deps.clock.now();
  const token = randomBytes(24).toString('base64url');
  let machineId: number | null = null;
  const out = await txRetry(deps.store, async (db) => {
    const row = await repo.ownInstanceRow(db, auth.user.id, id);
    if (!row || row.destroyed_at !== null) throw InstanceErrors.notFound(`No such instance: ${id}`);
    const pending = await repo.pendingRestartRequest(db, id, now);
    if (pending && (row.actual_status === 'loading' || row.actual_status === 'running')) {
      const ago = Math.max(0, Math.round((now - pending.created_at) / 1000));
      if (pending.kind !== kind)
        throw InstanceErrors.invalidState(
          `Cannot ${kind} instance ${id} while a ${pending.kind} of it is under way (asked ${ago} s ago); it runs again once its host has carried it out`,
        );
      return {
        success: true,
        msg: `Instance ${id} is already being ${DONE[kind]} (asked ${ago} s ago); it runs again once its host has carried it out`,
      };
    }
    const a = row.actual_status as ActualStatus;
    if (!ALLOWED[kind].includes(a) || row.intended_status !== 'running')
      throw InstanceErrors.invalidState(`Cannot ${kind} an instance in state ${stateName(a)}`);
    const msg = restartRequestedMsg(kind);
    await settleInstance(db, row, now);
    const moved = await repo.moveInstance(
      db,
      id,
      { actual: 'running', intended: 'running' },
      { actual_status: 'loading', status_msg: msg },
    );
    if (!moved) throw new LostRace(`state of instance ${id}`);
    await recordEvent(
      db,
      now,
      instanceEvent(row, 'running', 'loading', { intended_status: 'running', status_msg: msg }),
    );
    await repo.insertInstanceRequest(db, {
      instanceId: id,
      userId: auth.user.id,
      kind,
      args: '{}',
      tokenHash: sha256Hex(token),
      now,
      ttlMs: REQUEST_TTL_MS,
    });
    machineId = row.machine_id;
    return {
      success: true,
      msg: `${kind === 'reboot' ? 'Reboot' : 'Recycle'} requested: the host carries it out now (at the latest at its next sync); the instance is loading until it runs again. The result_url answers once the host has done it.`,
      result_url: `${origin}${RESULTS_PATH}/${token}/`,
    };
  });
  if (machineId !== null) deps.agentWake.notify([machineId]);
  return out;
}

/** The text at a result URL; null (404) until the agent answered, and after it expired. */
export async function readResult(deps: Deps, token: string): Promise<string | null> {
  if (!/^[A-Za-z0-9_-]{20,64}$/.test(token)) return null;
  const r = await repo.requestResultByToken(deps.db, sha256Hex(token), deps.clock.now());
  return r && r.done_at !== null ? (r.result ?? '') : null;
}
