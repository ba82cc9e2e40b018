// Table types of the copies module (migrations 036, 043): renters' copies between their instances,
// and volume clones.
// Times are epoch ms.
import type { Generated } from 'kysely';

export interface CopiesTable {
  id: Generated<number>;
  user_id: number;
  /** 'instance' | 'volume' */
  src_kind: string;
  src_id: number;
  src_machine_id: number;
  src_path: string;
  /** 'instance' | 'volume' (a volume clone: the new volume) */
  dst_kind: string;
  dst_id: number;
  dst_machine_id: number;
  dst_path: string;
  /** A volume clone: the port of the SSH server the destination's agent opened for it (043). */
  dst_port: Generated<number | null>;
  /** 1: rsync compresses the data on the way (043). */
  compress: Generated<number>;
  /** JSON array of rsync --exclude patterns. */
  excludes: Generated<string>;
  /** 'queued' | 'running' | 'done' | 'failed' | 'canceled' */
  status: Generated<string>;
  /** The one-time key's private half, sealed with the server's secret (encryptSecret). */
  key_enc: string;
  /** SHA-256 (hex) of the one-time key's public blob. */
  key_fp: string;
  /** When the destination's SSH server took the key (it takes it once). */
  key_used_at: number | null;
  /** The last progress line the source's agent reported. */
  progress: Generated<string>;
  bytes: number | null;
  /** Why it failed, or how it ended. */
  msg: Generated<string>;
  created_at: number;
  started_at: number | null;
  /** Set when it ended (done, failed, canceled); null while active. */
  ended_at: number | null;
}

export interface CopyTables {
  copies: CopiesTable;
}
