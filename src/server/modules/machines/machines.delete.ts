// A host deletes one of their machines: POST /api/v0/machines/{id}/force_delete/ (the official
// CLI's `delete machine`). A command over three modules, all in ONE transaction: the machine is
// marked deleted (soft: its row stays for the billing ledger, earnings and past instances), the
// host's own instances on it are destroyed (billing settled), and its maintenance windows end.
// A live (not destroyed) instance of any other user refuses the deletion and nothing changes.
//
// The race with a rent is decided by the database. The deletion's first write is the
// conditional UPDATE of the machine row (machines.repo markMachineDeleted); a rent claims the
// same row with a conditional UPDATE that requires `deleted_at IS NULL` (claimMachine). Whichever
// writes first holds the row lock until it commits:
// - the deletion first: the rent's claim waits, then finds the machine deleted (404 offer);
// - the rent first: the deletion's UPDATE waits for the rent's commit, and the count of live
//   client instances that follows (a new statement, which sees every committed row) finds the
//   new instance: 409 machine_in_use, rolled back.
// On SQLite every write transaction runs alone (BEGIN IMMEDIATE), which decides the same way.
// So a live client instance never ends up on a deleted machine.
import type { Deps } from '../../deps.types.js';
import { txRetry } from '../../db/tx.js';
import { MachineErrors } from './machines.errors.js';
import * as repo from './machines.repo.js';
import { liveInstancesOn, destroyLiveRow } from '../instances/instances.actions.js';
import { lockMaintenance, cancelForDeletedMachine } from '../maintenance/maintenance.service.js';

export interface DeleteMachineReply {
  success: true;
  msg: string;
  machine_id: number;
  /** The host's own instances on the machine, destroyed with it. */
  instances_destroyed: number;
  /** Maintenance windows of the machine that had not ended, cancelled. */
  maintenances_cancelled: number;
}

export async function deleteMachine(
  deps: Pick<Deps, 'store' | 'clock' | 'kickOutbox' | 'log'>,
  hostId: number,
  machineId: number,
): Promise<DeleteMachineReply> {
  const now = deps.clock.now();
  const out = await txRetry(deps.store, async (trx) => {
    // Taken before the machine row (as scheduling takes it before it writes machines): a
    // schedule under way finishes first and its window is cancelled below; a later one finds the
    // machine deleted.
    await lockMaintenance(trx, deps.store.dialect, [machineId]);
    if (!(await repo.markMachineDeleted(trx, hostId, machineId, now))) throw MachineErrors.notFound();
    const clients = await repo.liveClientInstanceCount(trx, machineId, hostId);
    if (clients > 0)
      throw MachineErrors.inUse(
        clients === 1
          ? `Machine ${machineId} has 1 live instance of a client (running or stopped, not destroyed); it can be deleted once that instance is destroyed. Unlist it (unlist machine) so that no one else rents it meanwhile.`
          : `Machine ${machineId} has ${clients} live instances of clients (running or stopped, not destroyed); it can be deleted once they are destroyed. Unlist it (unlist machine) so that no one else rents it meanwhile.`,
        { success: false, live_client_instances: clients },
      );
    // Only the host's own instances are left: they go with the machine.
    const own = await liveInstancesOn(trx, machineId);
    for (const row of own) await destroyLiveRow(trx, row, now);
    const windows = await cancelForDeletedMachine(trx, hostId, machineId, now);
    return { instances: own.map((r) => r.id), windows };
  });
  deps.log.info(
    { host: hostId, machine: machineId, instances: out.instances, maintenances: out.windows },
    'machine deleted by its host',
  );
  if (out.windows > 0) deps.kickOutbox();
  const parts = [
    out.instances.length > 0
      ? `${out.instances.length} instance${out.instances.length === 1 ? '' : 's'} of yours on it destroyed`
      : '',
    out.windows > 0 ? `${out.windows} maintenance window${out.windows === 1 ? '' : 's'} cancelled` : '',
  ].filter(Boolean);
  return {
    success: true,
    msg: `Machine ${machineId} deleted${parts.length > 0 ? `: ${parts.join('; ')}` : ''}`,
    machine_id: machineId,
    instances_destroyed: out.instances.length,
    maintenances_cancelled: out.windows,
  };
}
