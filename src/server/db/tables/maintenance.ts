// Table types: maintenance windows. Conventions: see db/connection.ts (ms timestamps).
import type { Generated } from 'kysely';

/** The values of a window's maintenance_category. */
export type MaintenanceCategory = 'power' | 'internet' | 'disk' | 'gpu' | 'software' | 'other';

export interface MaintenanceWindowsTable {
  id: Generated<number>;
  machine_id: number;
  /** The host who scheduled it (the machine's owner at that moment). */
  host_id: number;
  /** Groups the windows of one scheduling call (batch or dnotify); seeds the e-mail keys. */
  batch_id: string;
  /** Epoch ms. */
  start_time: number;
  /** Epoch ms: start_time + effective duration. */
  end_time: number;
  /** Effective duration in hours (at least 1). */
  duration_hours: number;
  category: MaintenanceCategory;
  /** Client e-mails enqueued for this window. */
  notifications_sent: number;
  created_at: number;
  /** Set when cancelled; a cancelled window is never shown again. */
  canceled_at: number | null;
}

export interface MaintenanceTables {
  maintenance_windows: MaintenanceWindowsTable;
}

declare module './market.js' {
  interface MachinesTable {
    /**
     * Epoch ms: the latest end_time of the machine's windows not cancelled (null: none). Kept in
     * the transaction that schedules or cancels a window, and versioned (migration 017), so the
     * offer index knows which machines of a search page can have live windows.
     */
    maint_until: Generated<number | null>;
  }
}
