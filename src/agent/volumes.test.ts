// The agent's volumes without Docker: the directory method (the process runtime's) keeps a
// volume's files until the server's list no longer holds it; the process runtime links a volume
// at its mount path under the instance's root; the agent hands each instance's volumes to its
// runtime and deletes the volumes a sync no longer lists (and none when the server says nothing).
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { linkProcessVolumes, VolumeStore } from './volumes.js';
import {
  StillRuntime,
  desiredInstance,
  quietLog,
  settle,
  stubSync,
  testAgent,
} from '../../test/helpers/fake-runtime.js';
import type { InstanceSpec } from './runtime.js';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'openrig-volumes-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const log = { info: () => {}, warn: () => {} };

it('a directory volume keeps its files until the list no longer holds it', async () => {
  const store = new VolumeStore(tmp(), 'directory', log);
  const data = await store.ensure(7, 1);
  writeFileSync(path.join(data, 'f'), 'x');
  expect(await store.ensure(7, 1)).toBe(data);
  expect(readFileSync(path.join(data, 'f'), 'utf8')).toBe('x');
  await store.ensure(8, 1);
  await store.reconcile([{ id: 7 }, { id: 8 }]);
  expect(store.held()).toEqual([7, 8]);
  await store.reconcile([{ id: 8 }]);
  expect(store.held()).toEqual([8]);
  expect(existsSync(data)).toBe(false);
});

it('the process runtime links a volume at its mount path under the instance root', async () => {
  const store = new VolumeStore(tmp(), 'directory', log);
  const root = tmp();
  const env = await linkProcessVolumes(store, root, [{ id: 3, mountPath: '/workspace/ckpt', sizeGb: 1 }]);
  expect(readlinkSync(path.join(root, 'workspace/ckpt'))).toBe(store.dataDir(3));
  expect(env).toEqual({ OPENRIG_VOLUME_3: store.dataDir(3) });
  // Again (a restart): the link is replaced, not doubled.
  await linkProcessVolumes(store, root, [{ id: 3, mountPath: '/workspace/ckpt', sizeGb: 1 }]);
  expect(readlinkSync(path.join(root, 'workspace/ckpt'))).toBe(store.dataDir(3));
});

class VolumeRuntime extends StillRuntime {
  readonly started: InstanceSpec[] = [];
  constructor(readonly volumes: VolumeStore) {
    super();
  }
  override async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.started.push(spec);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id });
    return super.start(spec);
  }
}

it('the agent gives each instance its volumes, and deletes those a sync no longer lists', async () => {
  const store = new VolumeStore(tmp(), 'directory', log);
  await store.ensure(11, 1);
  await store.ensure(12, 1);
  const rt = new VolumeRuntime(store);
  const agent = testAgent(rt, { log: quietLog });
  const said: { volumes?: { id: number; machine_id: number; size_gb: number }[] } = {};
  stubSync(agent, () => ({
    instances: [
      desiredInstance(1, 'running', null, { volumes: [{ id: 11, mount_path: '/data', size_gb: 15 }] }),
    ],
    ...said,
  }));
  // A server that says nothing of volumes: none is deleted.
  await agent.syncOnce();
  await settle();
  expect(store.held()).toEqual([11, 12]);
  expect(rt.started[0]?.volumes).toEqual([{ id: 11, mountPath: '/data', sizeGb: 15 }]);
  said.volumes = [{ id: 11, machine_id: 5, size_gb: 15 }];
  await agent.syncOnce();
  expect(store.held()).toEqual([11]);
});
