// The schemas shared by every module live in the contract (src/contract/schemas/common.ts); this
// file names them for the server's own modules.
export {
  errorSchema,
  successSchema,
  successReply,
  rowId,
  idParams,
  authErrors,
  maintenanceWindowSchema,
} from '../../contract/schemas/common.js';

/** The params of a route with one `:id` (idParams checks them). */
export interface IdParams {
  id: number;
}
