// Table types of the trust module (migration 040-trust): uptime samples, reliability parts and
// renter reports. Times are epoch ms; days are UTC days since the epoch.
import type { Generated } from 'kysely';

/** Per machine and UTC day: how long it was expected online, and how long it was. */
export interface MachineUptimeTable {
  machine_id: number;
  day: number;
  /** Listed or rented (and not deleted) while its agent had heartbeated before. */
  listed_ms: Generated<number>;
  /** Of listed_ms, the time its online_state (its heartbeats) said online. */
  online_ms: Generated<number>;
}

/** One row (id 1): when the uptime sampler last counted. */
export interface UptimeSamplerTable {
  id: number;
  sampled_at: number;
}

/** The parts of a machine's last computed reliability (its score is also machines.reliability). */
export interface MachineReliabilityTable {
  machine_id: number;
  listed_ms: number;
  online_ms: number;
  starts: number;
  start_failures: number;
  ended: number;
  interrupted: number;
  reporters: number;
  score: number;
  computed_at: number;
}

/** A renter's report of a problem with a machine it rented. */
export interface MachineReportsTable {
  id: Generated<number>;
  machine_id: number;
  host_id: number;
  reporter_id: number;
  problem: string;
  message: string;
  day: number;
  created_at: number;
}

export interface TrustTables {
  machine_uptime: MachineUptimeTable;
  uptime_sampler: UptimeSamplerTable;
  machine_reliability: MachineReliabilityTable;
  machine_reports: MachineReportsTable;
}
