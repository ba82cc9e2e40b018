// The environment an instance starts with: the server's env (the account's variables under the
// instance's own, merged by the server) and the names the platform adds on top. Every name the
// platform adds is one an account variable may not take (contract/env-var-rules.ts), so an
// account variable is never silently replaced.
import { expect, it } from 'vitest';
import type { InstanceSpec } from './runtime.js';
import { containerCreateBody } from './runtime-docker.js';
import { StillRuntime, desiredInstance, stubSync, testAgent } from '../../test/helpers/fake-runtime.js';
import { isPlatformName } from '../contract/env-var-rules.js';

class Recording extends StillRuntime {
  readonly started: InstanceSpec[] = [];
  override async start(spec: InstanceSpec): Promise<{ sshPort: number }> {
    this.started.push(spec);
    this.state.set(spec.id, { state: 'running', sshPort: 40000 + spec.id });
    return { sshPort: 40000 + spec.id };
  }
}

it('the server env reaches the runtime whole; each name the platform adds is reserved', async () => {
  const rt = new Recording();
  const agent = testAgent(rt);
  agent.machineIds = [5];
  const env = { HF_TOKEN: 'hf_1', SHARED: 'own', MULTI: 'a\nb', HOME: '/data' };
  const w = desiredInstance(7, 'running', null, {
    env,
    container_api_key: 'ori_k',
    ports: [{ container: 8080, proto: 'tcp' }],
  });
  stubSync(agent, () => ({ instances: [w] }));
  await agent.syncOnce();
  for (let i = 0; i < 50 && rt.started.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  const spec = rt.started[0]!;
  expect(spec.env).toMatchObject(env);

  // What the Docker runtime puts in the container: the spec's env and its own additions.
  const body = containerCreateBody({
    spec: { ...spec, publicHost: '203.0.113.7' },
    agentUid: 'u',
    sshPort: 41022,
    hostPorts: { '8080/tcp': 41080 },
    diskQuota: false,
  });
  const inContainer = Object.fromEntries(
    (body.Env as string[]).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]),
  );
  expect(inContainer).toMatchObject(env);
  const added = Object.keys(inContainer).filter((k) => !(k in env));
  expect(added.sort()).toEqual(
    [
      'CONTAINER_API_KEY',
      'CONTAINER_ID',
      'OPENRIG_INSTANCE_ID',
      'OPENRIG_SERVER_URL',
      'OPENRIG_SSH_PORT',
      'OPENRIG_TCP_PORT_8080',
      'PUBLIC_IPADDR',
      'VAST_TCP_PORT_22',
      'VAST_TCP_PORT_8080',
    ].sort(),
  );
  for (const k of added) expect(isPlatformName(k), k).toBe(true);
  // With GPUs the daemon adds these two as well.
  for (const k of ['CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES']) expect(isPlatformName(k)).toBe(true);
});
