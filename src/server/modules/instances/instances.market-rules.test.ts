// The market's priority rule, pure: owner > on-demand > bids by price, the earlier bid on a tie.
import { describe, expect, it } from 'vitest';
import { bidToWin, minWinningBid, preempts, tierOf, type Contender } from './instances.market-rules.js';

const bid = (price: number, bidAt: number, id: number): Contender => ({ tier: 'bid', price, bidAt, id });
const od: Contender = { tier: 'on-demand', price: 1, bidAt: 0, id: 9 };
const owner: Contender = { tier: 'owner', price: 1, bidAt: 0, id: 8 };

describe('the priority rule', () => {
  it('owner and on-demand rentals preempt bids, never each other', () => {
    expect(preempts(od, bid(99, 0, 1))).toBe(true);
    expect(preempts(owner, bid(99, 0, 1))).toBe(true);
    expect(preempts(owner, od)).toBe(false);
    expect(preempts(od, owner)).toBe(false);
    expect(preempts(bid(99, 0, 1), od)).toBe(false);
    expect(preempts(bid(99, 0, 1), owner)).toBe(false);
  });

  it('a higher bid wins; on a tie the earlier bid, then the lower id', () => {
    expect(preempts(bid(0.3, 5, 2), bid(0.2, 1, 1))).toBe(true);
    expect(preempts(bid(0.2, 5, 2), bid(0.3, 1, 1))).toBe(false);
    expect(preempts(bid(0.2, 5, 2), bid(0.2, 1, 1))).toBe(false);
    expect(preempts(bid(0.2, 1, 2), bid(0.2, 5, 1))).toBe(true);
    expect(preempts(bid(0.2, 1, 1), bid(0.2, 1, 2))).toBe(true);
    expect(preempts(bid(0.2, 1, 2), bid(0.2, 1, 2))).toBe(false);
  });

  it('tiers: a bid is a bid whoever places it; the host renting its own machine is the owner', () => {
    expect(tierOf({ is_bid: 1, user_id: 7 }, 7)).toBe('bid');
    expect(tierOf({ is_bid: 0, user_id: 7 }, 7)).toBe('owner');
    expect(tierOf({ is_bid: 0, user_id: 6 }, 7)).toBe('on-demand');
  });

  it('the lowest winning bid: the floor, or one micro-dollar above the running bid', () => {
    expect(bidToWin(0.25)).toBe(0.250001);
    expect(bidToWin(0.1 + 0.2)).toBe(0.300001);
    expect(minWinningBid(0.2, null)).toBe(0.2);
    expect(minWinningBid(0.2, 0.250001)).toBe(0.250001);
    expect(minWinningBid(0.5, 0.250001)).toBe(0.5);
  });
});
