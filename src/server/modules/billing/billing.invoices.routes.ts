// Billing history in the official CLI's formats (docs/market.md, "Billing history"):
// GET  /api/v0/users/me/invoices?sdate&edate&inc_charges → {invoices, current}     (show invoices)
// POST /api/v0/contracts/fetch/ {label, contract_ids}     → {contracts}             (--instance_label)
// GET  /api/v0/invoices?select_filters                    → [invoice, …]            (search invoices)
// GET  /api/v1/invoices/?select_filters&limit&after_token → {results, next_token}  (show invoices-v1 -i)
// GET  /api/v0/charges/?select_filters&limit&after_token  → {results, next_token}  (show invoices-v1 -c)
import { requireAuth } from '../../http/auth.js';
import { route } from '../../http/route.js';
import * as C from '../../../contract/schemas/billing.js';
import { contractsLabelled, showInvoices as show } from './billing.invoices.js';
import {
  chargesV1 as charges,
  invoicesV1 as invoices,
  searchInvoices as search,
} from './billing.invoices-v1.js';

export const showInvoices = route(C.showInvoices)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => show(deps.db, requireAuth(req).user.id, req.query, deps.clock.now()),
});

export const fetchContracts = route(C.fetchContracts)({
  // A read of the caller's instances (their labels), sent as a POST.
  config: { scope: 'instances', access: 'read' },
  handler: (deps) => async (req) => contractsLabelled(deps.db, requireAuth(req).user.id, req.body),
});

export const searchInvoices = route(C.searchInvoices)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => search(deps.db, requireAuth(req).user.id, req.query),
});

export const invoicesV1 = route(C.invoicesV1)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => invoices(deps.db, requireAuth(req).user.id, req.query),
});

export const chargesV1 = route(C.chargesV1)({
  config: { scope: 'billing' },
  handler: (deps) => async (req) => charges(deps.db, requireAuth(req).user.id, req.query),
});

export const invoiceRoutes = [showInvoices, fetchContracts, searchInvoices, invoicesV1, chargesV1];
