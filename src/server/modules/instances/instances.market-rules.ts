// The market's priority rule (docs/market.md, "Interruptible instances"), pure:
//   the owner's own rentals on their own machines > on-demand rentals > interruptible rentals by
//   bid, higher first, the earlier bid first on a tie.
// Owner and on-demand rentals never preempt each other (the owner takes a machine back from a
// renter with a maintenance window); both preempt bids.
import { roundPrice } from '../../../contract/money.js';

export type Tier = 'owner' | 'on-demand' | 'bid';

/** One side of a comparison: an instance as the market ranks it. */
export interface Contender {
  tier: Tier;
  /** The bid, $/h for the machine (dph_compute); read only for bids. */
  price: number;
  /** When the bid was set (ms); read only for bids. */
  bidAt: number;
  id: number;
}

/** The tier of an instance on a machine of host `hostId`: a bid is a bid, whoever places it. */
export function tierOf(row: { is_bid: number; user_id: number }, hostId: number): Tier {
  if (row.is_bid === 1) return 'bid';
  return row.user_id === hostId ? 'owner' : 'on-demand';
}

export function contenderOf(
  row: {
    id: number;
    is_bid: number;
    user_id: number;
    dph_compute: number;
    bid_at: number | null;
    created_at: number;
  },
  hostId: number,
): Contender {
  return {
    tier: tierOf(row, hostId),
    price: row.dph_compute,
    bidAt: row.bid_at ?? row.created_at,
    id: row.id,
  };
}

/** Whether `challenger` takes the machine from `holder` (which runs or is about to). */
export function preempts(challenger: Contender, holder: Contender): boolean {
  if (holder.tier !== 'bid') return false; // owner and on-demand rentals are never preempted
  if (challenger.tier !== 'bid') return true;
  if (challenger.price !== holder.price) return challenger.price > holder.price;
  if (challenger.bidAt !== holder.bidAt) return challenger.bidAt < holder.bidAt;
  return challenger.id < holder.id;
}

/** The smallest price step: prices are kept to the micro-dollar. */
export const BID_STEP = 0.000001;

/** The lowest bid that takes a machine a bid of `running` $/h holds: one step above it. */
export function bidToWin(running: number): number {
  return roundPrice(running + BID_STEP);
}

/** The lowest price that wins a machine now: its floor, or one step above the running bid. */
export function minWinningBid(floor: number, bidToWinDph: number | null): number {
  return bidToWinDph !== null && bidToWinDph > floor ? bidToWinDph : floor;
}

/** status_msg of an instance preempted by `by`, with `graceS` seconds between SIGTERM and stop. */
export function preemptedMsg(by: Tier, graceS: number): string {
  const who = by === 'bid' ? 'a higher bid' : by === 'owner' ? "the machine's owner" : 'an on-demand rental';
  return `Preempted: outbid by ${who} (${by} tier); SIGTERM sent, stopped within ${graceS} s with its disk kept; it resumes by itself when its bid wins the machine again`;
}

/** status_msg of a bid that waits for the machine without having run there yet (or again). */
export function waitingMsg(holder: Tier | null, winAt: number | null): string {
  if (holder === 'bid')
    return `Waiting: outbid by the running bid; a bid of ${winAt} $/h or more takes the machine now`;
  if (holder === 'owner') return "Waiting: the machine's owner rents it; the bid resumes when it is free";
  if (holder === 'on-demand')
    return 'Waiting: an on-demand rental holds the machine; the bid resumes when it is free';
  return 'Waiting for the machine';
}

export const RESUMED_MSG = 'Resumed: its bid wins the machine again; starting';
