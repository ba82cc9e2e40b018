// What the Docker runtime makes of the engine's answer about a container's size, with a stand-in
// engine (the real one always reports it in tests: runtime-docker.usage.test.ts).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DockerEngine } from './docker-engine.js';
import { DockerRuntime, LABEL_AGENT } from './runtime-docker.js';

function runtimeAnswering(container: Record<string, unknown> | null): DockerRuntime {
  const engine = { inspect: async () => container } as unknown as DockerEngine;
  return new DockerRuntime({
    stateDir: mkdtempSync(path.join(tmpdir(), 'openrig-size-')),
    agentUid: 'agent-1',
    sshBind: '127.0.0.1',
    engine,
    log: { info() {}, warn() {} },
  });
}

const ours = { Config: { Labels: { [LABEL_AGENT]: 'agent-1' } }, Mounts: [] };

describe('docker runtime: disk usage from the engine', () => {
  it("is the writable layer's size when the engine reports it, zero included", async () => {
    expect(await runtimeAnswering({ ...ours, SizeRw: 3_000_000 }).diskUsage(1)).toEqual({ bytes: 3_000_000 });
    expect(await runtimeAnswering({ ...ours, SizeRw: 0 }).diskUsage(1)).toEqual({ bytes: 0 });
  });

  it('is no measurement when the engine leaves the size out: it throws rather than report an empty disk', async () => {
    await expect(runtimeAnswering({ ...ours }).diskUsage(1)).rejects.toThrow(/did not report the size/);
  });

  it("is null for no container, or another agent's", async () => {
    expect(await runtimeAnswering(null).diskUsage(1)).toBeNull();
    const theirs = { Config: { Labels: { [LABEL_AGENT]: 'agent-2' } }, SizeRw: 5 };
    expect(await runtimeAnswering(theirs).diskUsage(1)).toBeNull();
  });
});
