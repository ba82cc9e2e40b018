// POST wait: the agent's long poll (agent-gateway.wake.ts). Held in memory until a wake of one
// of the agent's machines, the timeout, the agent going away or this process stopping; the only
// database reads are its key, its machines and one check for a request it was not handed yet.
import type { Deps } from '../../deps.types.js';
import type { AuthContext } from '../../identity.js';
import type { WaitRequest, WaitResponse } from '../../../contract/agent-protocol.js';
import * as repo from './agent-gateway.repo.js';

/**
 * The longest a wait is held, whatever the agent asks: short enough that a connection through a
 * proxy that ends idle requests (often after 60 s) lives through it, long enough that an idle
 * agent calls about twice a minute.
 */
export const MAX_WAIT_S = 30;

export async function waitForWork(
  deps: Deps,
  auth: AuthContext,
  body: WaitRequest,
  /** Registers what to do when the agent closes the connection meanwhile. */
  onGone: (cancel: () => void) => void,
): Promise<WaitResponse> {
  const timeoutMs = Math.min(body.timeout_s ?? MAX_WAIT_S, MAX_WAIT_S) * 1000;
  const own = await repo.ownMachines(deps.store, auth.user.id, body.agent_uid, [
    ...new Set(body.machine_ids),
  ]);
  // Machines that are not its own are for its next sync to sort out (register again, or drop
  // them): the wait holds for the others, or just runs out.
  const ids = own.map((m) => m.id);
  // Hearing the other processes first: a request queued after the check below wakes this wait.
  await deps.agentWake.hear().catch((err: unknown) => {
    deps.log.warn({ err }, 'agent wakes from other processes unavailable; waits hear this one only');
  });
  const w = deps.agentWake.wait(ids, timeoutMs);
  onGone(w.cancel);
  if (
    body.after_request_id !== undefined &&
    (await repo.newRequestAfter(deps.db, ids, body.after_request_id, deps.clock.now()))
  ) {
    w.cancel();
    return { success: true, wake: true };
  }
  return { success: true, wake: await w.woken };
}
