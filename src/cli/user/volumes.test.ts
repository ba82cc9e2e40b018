// openrig volumes: the search body from a query (no default filters: volume offers have their own
// fields), and the tables of offers and volumes.
import { expect, it } from 'vitest';
import { volumeOffersTable, volumeSearchBody, volumesTable } from './volumes.js';

it('builds the search body from a query, an order and a limit', () => {
  expect(volumeSearchBody('disk_space>=50 storage_cost<0.2 geolocation=any', { limit: 5 })).toEqual({
    disk_space: { gte: 50 },
    storage_cost: { lt: 0.2 },
    order: [['storage_cost', 'asc']],
    limit: 5,
  });
  expect(volumeSearchBody('', { order: 'disk_space-' })).toEqual({ order: [['disk_space', 'desc']] });
});

it('shows offers and volumes, with the instance mounting each', () => {
  expect(volumeOffersTable([{ id: 3, machine_id: 12, disk_space: 150, storage_cost: 0.1 }])).toMatch(
    /ID +Machine +Free GB +\$\/GB\/month.*\n3 +12 +150 +0\.100/s,
  );
  const t = volumesTable([
    {
      id: 7,
      label: 'ckpt',
      disk_space: 50,
      status: 'ready',
      machine_id: 12,
      storage_cost: 0.1,
      start_date: 0,
      instances: [41],
      mount_path: '/data',
    },
  ]);
  expect(t).toContain('41 at /data');
  expect(t).toContain('ckpt');
});
