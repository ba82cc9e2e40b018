// How the server reads an agent's report about one instance (a sync's `instances[]` entry) into
// moves of the instance's row. Pure: the agent gateway calls it with the row it read and writes
// each move with a conditional update, so a row that changed meanwhile is decided again there by
// the state machine (instance-states.ts applyAgentReport), and the database decides every race.
//
// The rules, in the order they apply:
// 1. A report of an older configuration generation describes the container an update replaces:
//    it moves nothing, so the instance reads `running` again only once the new container runs.
// 2. `running` means SSH accepts connections: a `running` report without an SSH port is `loading`.
// 3. A `loading` report on a `loading` row with a new step (`pulling … 312/845 MB`) writes only
//    that step as the row's status_msg.
// 4. A report of the status the row already has (the usual heartbeat) writes nothing and leaves the
//    server's own status_msg ("Start requested") alone; a `running` one with a new SSH port or
//    address is written.
// 5. A `running` report on a `loading` row whose reboot or recycle the host has not carried out yet
//    is the old container that still runs: ignored until the request is done.
// 6. An `exited` report on a null row whose agent last said `exited` is the stale report of before
//    the client's start (which set the row back to null): it must not undo the start. A new start's
//    failure is reported `loading` first, so it still lands.
// 7. A `running` report the state machine refuses from the row's status but allows after `loading`
//    (a quick start that finished between two syncs, from null or from stopped after a client's
//    start; never from exited, unknown or offline) passes through `loading` first.
// Anything else is the reported status, for the state machine to apply or refuse.
import type { InstanceReport } from './agent-protocol.js';
import {
  applyAgentReport,
  isActualStatus,
  isIntendedStatus,
  type InstanceState,
  type ReportedStatus,
} from './instance-states.js';

/** What the sync reads of an instance's row (its statuses as stored). */
export interface ReportedRow {
  actual_status: string | null;
  intended_status: string;
  status_msg: string | null;
  ssh_host: string | null;
  ssh_port: number | null;
  /** The status the agent reported at the previous sync (null before the first). */
  agent_state: string | null;
  config_generation: number;
}

/** An agent's report about the instance (the fields that move it). */
export type InstanceReportIn = Pick<
  InstanceReport,
  'state' | 'status_msg' | 'ssh_port' | 'ports' | 'generation'
>;

export interface ReportContext {
  /** The address renters reach the instance's machine at. */
  sshHost: string;
  /** A reboot or recycle of the instance is pending (its request not yet answered). */
  restarting: boolean;
}

/** One status move, written conditionally on the status the row has at the write. */
export interface ReportMove {
  to: ReportedStatus;
  status_msg: string;
  /** With a move to `running`: where SSH is reached, and the port map with SSH's port in it. */
  ssh?: {
    host: string;
    port: number;
    ports: Record<string, { HostIp: string; HostPort: string }[]>;
  };
}

export type ReportOutcome =
  /** The report moves nothing (rules 1, 4, 5, 6). */
  | { kind: 'ignore'; rule: 'older-generation' | 'unchanged' | 'restart-pending' | 'stale-exited' }
  /** Only the step of a start under way: write status_msg while the row is still `loading` (rule 3). */
  | { kind: 'step'; status_msg: string }
  /** Status moves to make in order, stopping at the first the state machine refuses. */
  | { kind: 'moves'; moves: ReportMove[] };

/** Decides what an agent's report about an instance does to its row (the rules above). */
export function interpretReport(row: ReportedRow, rep: InstanceReportIn, ctx: ReportContext): ReportOutcome {
  if (rep.generation !== undefined && rep.generation < row.config_generation)
    return { kind: 'ignore', rule: 'older-generation' };
  const state: ReportedStatus = rep.state === 'running' && !rep.ssh_port ? 'loading' : rep.state;
  const msg = rep.status_msg ?? '';
  if (row.actual_status === state && state === 'loading' && msg !== '' && msg !== row.status_msg)
    return { kind: 'step', status_msg: msg };
  if (
    row.actual_status === state &&
    (state !== 'running' || (row.ssh_port === rep.ssh_port && row.ssh_host === ctx.sshHost))
  )
    return { kind: 'ignore', rule: 'unchanged' };
  if (state === 'running' && row.actual_status === 'loading' && ctx.restarting)
    return { kind: 'ignore', rule: 'restart-pending' };
  if (state === 'exited' && row.actual_status === null && row.agent_state === 'exited')
    return { kind: 'ignore', rule: 'stale-exited' };
  const move: ReportMove = { to: state, status_msg: msg };
  if (state === 'running') {
    const port = rep.ssh_port!;
    move.ssh = {
      host: ctx.sshHost,
      port,
      ports: { ...rep.ports, '22/tcp': [{ HostIp: '0.0.0.0', HostPort: String(port) }] },
    };
    const s: InstanceState = {
      actual: isActualStatus(row.actual_status) ? row.actual_status : null,
      intended: isIntendedStatus(row.intended_status) ? row.intended_status : 'running',
    };
    if (applyAgentReport(s, 'running').kind === 'reject') {
      const via = applyAgentReport(s, 'loading');
      if (
        via.kind === 'apply' &&
        applyAgentReport({ actual: via.next, intended: s.intended }, 'running').kind === 'apply'
      )
        return { kind: 'moves', moves: [{ to: 'loading', status_msg: 'starting' }, move] };
    }
  }
  return { kind: 'moves', moves: [move] };
}
