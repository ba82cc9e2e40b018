// An instance's SSH server asks the control server for the instance's current keys before it
// accepts one, so a key detached or deleted on the server stops working at the next login, not at
// the agent's next sync.
import { AgentClient } from './agent-client.js';
import type { CurrentKeys } from './ssh-server.js';

/** The control server and the host's key that the check authenticates with. */
export interface KeyCheck {
  server: string;
  apiKey: string;
}

/** The server's current keys for the instance; null (use the synced file) when it cannot answer. */
export function serverKeys(id: number, c: KeyCheck, log: (msg: string) => void): CurrentKeys {
  const client = new AgentClient(c.server, c.apiKey);
  return async (): Promise<string[] | null> => {
    try {
      return (await client.authorizedKeys(id)).authorized_keys;
    } catch (err) {
      log(
        `the server did not confirm the keys (${err instanceof Error ? err.message : String(err)}); using the synced ones`,
      );
      return null;
    }
  };
}

/**
 * Whether a key is the one-time key of a copy into the instance, as the control server says
 * (false when it cannot answer: a copy's key is never taken on the agent's word alone).
 */
export function serverCopyGrant(
  id: number,
  c: KeyCheck,
  log: (msg: string) => void,
): (keyBlob: Buffer, consume: boolean) => Promise<boolean> {
  const client = new AgentClient(c.server, c.apiKey);
  return async (blob, consume) => {
    try {
      return (await client.copyAuth(id, blob.toString('base64'), consume)).ok === true;
    } catch (err) {
      log(`the server did not confirm a copy key (${err instanceof Error ? err.message : String(err)})`);
      return false;
    }
  };
}
