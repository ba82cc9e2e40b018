// Error codes of maintenance scheduling: the exact texts and the 400 vs 422 split of the published
// API (docs/maintenance.md); the codes (it names none) are ours.
import { defineErrors } from '../../errors.js';

export const MaintenanceErrors = defineErrors({
  idsNotList: [400, 'bad_request', 'machine_ids must be a non-empty list'],
  idsTooMany: [400, 'bad_request', 'machine_ids must contain at most 100 entries'],
  idsNoneValid: [400, 'bad_request', 'No valid machine_ids provided'],
  durationInvalid: [400, 'bad_request', 'duration must be a positive number'],
  durationTooLong: [400, 'bad_request', 'duration must be at most 8760 hours'],
  categoryInvalid: [
    400,
    'bad_request',
    'maintenance_category must be one of: disk, gpu, internet, other, power, software',
  ],
  sdateMissing: [422, 'invalid_sdate', 'Missing sdate'],
  sdateNotNumeric: [422, 'invalid_sdate', 'sdate must be a numeric timestamp'],
  sdatePast: [422, 'invalid_sdate', 'sdate must be in the future'],
  sdateTooFar: [422, 'invalid_sdate', 'sdate must be within 1 year'],
  /** Rule 4: no submitted machine is the caller's (the body also has success: false, results). */
  noneOwned: [400, 'not_found', 'None of the submitted machines exists or is owned by you'],
  /** Owned machines were submitted but none could be scheduled (all overlap). */
  noneScheduled: [
    400,
    'maintenance_overlap',
    'No machine was scheduled: every owned machine already has an overlapping window',
  ],
  machineNotFound: [404, 'not_found', 'Machine not found or not owned by you'],
  overlap: [
    409,
    'maintenance_overlap',
    'The machine already has a maintenance window that overlaps this one; cancel it first',
  ],
  machineIdsQuery: [400, 'bad_request', 'machine_ids must be a JSON list of machine IDs, like [1,2]'],
});

/** Per-entry failure texts inside a 200 (or the 400 when none is owned). Same text for "absent" and "not yours". */
export const ENTRY_NOT_FOUND_MSG = 'Machine not found or not owned by you';
