// A ProcessRuntime with real processes for the runtime's own tests: its own state directory
// (SSH on loopback, a 2 s stop grace), and every instance it still holds destroyed after the
// tests, the directory removed (as a hook of the calling file or describe block).
// Uses the built supervisor (dist/agent/supervisor.js; `npm test` builds first).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import { ProcessRuntime } from '../../src/agent/runtime-process.js';

export function useProcessRuntime(name: string): { dir: string; rt: ProcessRuntime } {
  const dir = mkdtempSync(path.join(tmpdir(), `openrig-rt-${name}-`));
  const rt = new ProcessRuntime({ stateDir: dir, sshBind: '127.0.0.1', stopGraceMs: 2000 });
  afterAll(async () => {
    for (const id of await rt.list()) await rt.destroy(id);
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, rt };
}
