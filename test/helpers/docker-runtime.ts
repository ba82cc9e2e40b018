// A DockerRuntime against the real engine for the runtime's own tests: its own state directory,
// the busybox test image, and the containers of the test's instance ids removed before the
// tests and destroyed after (as hooks of the calling describe block).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { DockerRuntime, containerName } from '../../src/agent/runtime-docker.js';
import type { InstanceSpec } from '../../src/agent/runtime.js';
import { buildTestImage } from './docker.js';

export function useDockerRuntime(o: {
  /** Names the state directory and the agent uid. */
  name: string;
  ids: number[];
  env?: Record<string, string>;
  stopGraceS?: number;
}) {
  const dir = mkdtempSync(path.join(tmpdir(), `openrig-docker-${o.name}-`));
  const rt = new DockerRuntime({
    stateDir: dir,
    agentUid: `agent-${o.name}-test`,
    sshBind: '127.0.0.1',
    log: { info: () => {}, warn: () => {} },
    ...(o.stopGraceS === undefined ? {} : { stopGraceS: o.stopGraceS }),
  });
  let image = '';
  /** An instance of the test image with no onstart, 1 GB and no keys, unless `over` says otherwise. */
  const spec = (id: number, over: Partial<InstanceSpec> = {}): InstanceSpec => ({
    id,
    image,
    disk: 1,
    onstart: '',
    env: o.env ?? {},
    authorizedKeys: [],
    ...over,
  });
  beforeAll(async () => {
    image = buildTestImage('openrig-test/busybox:1');
    for (const id of o.ids) await rt.engine.remove(containerName(id));
  }, 60_000);
  afterAll(async () => {
    for (const id of o.ids) await rt.destroy(id);
    await rt.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { rt, spec, image: () => image };
}
