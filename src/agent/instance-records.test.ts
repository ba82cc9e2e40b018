import { describe, expect, it } from 'vitest';
import { InstanceRecords } from './instance-records.js';

describe('InstanceRecords', () => {
  it('keeps one record per instance, merging each change into it', () => {
    const r = new InstanceRecords();
    expect(r.get(1)).toEqual({ announceLoading: false, waiting: false, seenHere: false });
    r.set(1, { failure: 'boom', generation: 2 });
    r.set(1, { announceLoading: true });
    expect(r.get(1)).toMatchObject({ failure: 'boom', generation: 2, announceLoading: true });
    r.set(2, { waiting: true });
    expect(r.ids((x) => x.failure !== undefined)).toEqual([1]);
    expect(r.ids((x) => x.waiting)).toEqual([2]);
  });

  it('drops a record once it holds nothing, so ended instances are not kept', () => {
    const r = new InstanceRecords();
    r.set(3, { waiting: true, machineId: 7 });
    r.set(3, { waiting: false });
    expect(r.ids(() => true)).toEqual([3]);
    r.clearMachines();
    expect(r.ids(() => true)).toEqual([]);
  });

  it('lists the operations under way', async () => {
    const r = new InstanceRecords();
    const done = Promise.resolve();
    r.set(4, { op: { op: 'start', done } });
    r.set(5, { progress: 'pulling' });
    expect(r.ops()).toEqual([{ op: 'start', done }]);
    r.set(4, { op: undefined });
    expect(r.ops()).toEqual([]);
    expect(r.ids(() => true)).toEqual([5]);
  });
});
