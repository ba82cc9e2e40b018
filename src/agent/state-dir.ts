// What the agent keeps in its --state-dir across restarts: agent.json (its stable agent_uid) and
// held.json (the instances this host has had). The runtimes keep instances/ID/ there too.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';

/** The agent's uid from agent.json, made (and written) on the first start. */
export function loadAgentUid(stateDir: string): string {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = path.join(stateDir, 'agent.json');
  if (existsSync(file)) {
    const j = JSON.parse(readFileSync(file, 'utf8')) as { agent_uid?: string };
    if (j.agent_uid) return j.agent_uid;
  }
  const uid = randomUUID();
  writeFileSync(file, JSON.stringify({ agent_uid: uid }) + '\n', { mode: 0o600, flag: 'w' });
  return uid;
}

/**
 * The instances this host has had (the agent saw them here, or started them), kept in
 * `held.json` in the state directory across restarts. An instance that is absent here while the
 * server shows it unknown or offline vanished if it is listed, and was never started (created
 * just before the agent stopped) if it is not. Each change is written at once (a temporary file
 * renamed over the old one, so a crash leaves one or the other whole).
 */
export class HeldInstances {
  private readonly file: string;
  private readonly ids: Set<number>;

  constructor(stateDir: string) {
    this.file = path.join(stateDir, 'held.json');
    let ids: number[] = [];
    if (existsSync(this.file)) {
      const j = JSON.parse(readFileSync(this.file, 'utf8')) as { ids?: unknown };
      if (Array.isArray(j.ids)) ids = j.ids.filter((x): x is number => Number.isInteger(x));
    }
    this.ids = new Set(ids);
  }

  has(id: number): boolean {
    return this.ids.has(id);
  }

  list(): number[] {
    return [...this.ids];
  }

  add(id: number): void {
    if (this.ids.has(id)) return;
    this.ids.add(id);
    this.save();
  }

  delete(id: number): void {
    if (this.ids.delete(id)) this.save();
  }

  private save(): void {
    const tmp = `${this.file}.tmp`;
    const ids = [...this.ids].sort((a, b) => a - b);
    writeFileSync(tmp, JSON.stringify({ ids }) + '\n', { mode: 0o600 });
    renameSync(tmp, this.file);
  }
}
