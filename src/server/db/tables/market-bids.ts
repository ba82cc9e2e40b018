// Table types: the market's columns (migration 027), declared by augmenting the offers module's
// tables as agent.ts does.
import type { Generated } from 'kysely';
import type { MachinesTable as _M, InstancesTable as _I } from './market.js';

declare module './market.js' {
  interface MachinesTable {
    /** While a bid holds the machine: the lowest bid that takes it ($/h); null otherwise. */
    bid_to_win_dph: number | null;
  }
  interface InstancesTable {
    /** 1 while an interruptible instance waits for priority (intended_status is 'stopped'). */
    bid_waiting: Generated<number>;
    /** When its current bid was set (ms): equal bids go to the earlier. */
    bid_at: number | null;
    /** End of the grace period it got when preempted (ms); null when not preempted. */
    preempt_until: number | null;
    /** The tier that preempted it: 'owner', 'on-demand' or 'bid'. */
    preempted_by: string | null;
  }
}

export type MarketBidColumns = Pick<_M, 'bid_to_win_dph'> &
  Pick<_I, 'bid_waiting' | 'bid_at' | 'preempt_until' | 'preempted_by'>;
