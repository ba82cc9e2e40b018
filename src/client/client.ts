// The typed client of the openrig API, used by the CLI, the end-to-end tests and the web console.
// One method per call of the API (docs/api.md), paths as the published interface writes them.
// It runs in the browser as well as in Node: no Node module, no Node global.
import type {
  AccountSettingsBody,
  AccountSettingsReply,
  ApiKey,
  AuditLogRow,
  IpAddrsReply,
  CreateFromTemplateBody,
  CreateInstanceBody,
  CreateTemplateBody,
  CreateInstanceReply,
  EnvVarsReply,
  Instance,
  InstanceEnvelope,
  MachineEarnings,
  UsageHistory,
  Invoices,
  MaintBatchBody,
  MaintBatchReply,
  SearchBody,
  SshKey,
  SuccessReply,
  DeleteMachineReply,
  TemplateReply,
  TemplatesReply,
  RestartReply,
  UpdateInstanceBody,
  UpdateInstanceReply,
  TfaMethodName,
  TfaStatus,
  TfaVerification,
  Webhook,
  EventsPage,
} from '../contract/api-types.js';
import { HttpClient, type HttpOptions, type RequestOptions } from './client.http.js';
import type {
  ApiKeyRow,
  BillingSummary,
  CancelMaintenanceReply,
  CurrentUser,
  InstanceRow,
  LedgerPage,
  MachineRow,
  MaintenanceWindow,
  OfferRow,
  PasswordLoginReply,
  SshKeyRow,
} from './rows.js';
import type {
  BenchmarkRow,
  HostTrustMachine,
  MachineReliability,
  MachineReport,
  MachineVerification,
  MyPayouts,
  PayoutDestination,
  PayoutMethod,
  ReportProblem,
} from './trust.js';

export {
  ApiError,
  NetworkError,
  HttpClient,
  CSRF_HEADER,
  SESSION_EXPIRED_MSG,
  INVALID_KEY_MSG,
  UNREACHABLE_MSG,
  type HttpOptions,
} from './client.http.js';
export type * from './rows.js';
export type * from './trust.js';
export { REPORT_PROBLEMS } from './trust.js';

const V0 = '/api/v0';

/** Leaves out empty fields, as the established clients do on 2FA calls. */
export function compact<T extends object>(o: T): Partial<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== null && v !== '') out[k] = v;
  return out as Partial<T>;
}

/**
 * A random version-4 UUID. crypto.randomUUID exists only in a secure context, and a console served
 * over plain HTTP is not one; getRandomValues is everywhere.
 */
export function newIdempotencyKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export class OpenrigClient extends HttpClient {
  constructor(opts: HttpOptions) {
    super(opts);
  }

  // Account
  currentUser(): Promise<CurrentUser> {
    return this.request('GET', `${V0}/users/current/`);
  }
  /** Changes the caller's own account settings (name, billing address, balance threshold). */
  updateAccount(body: AccountSettingsBody): Promise<AccountSettingsReply> {
    return this.request('PUT', `${V0}/users/`, { body });
  }
  /**
   * Password sign-in (no key): the user object with a session cookie (`lastCookie`), or a 2FA
   * challenge to complete with `tfaLogin({…, secret: tfa_secret})` or a code sent for it.
   */
  passwordLogin(email: string, password: string): Promise<PasswordLoginReply> {
    return this.request('POST', `${V0}/users/login/`, { body: { email, password } });
  }
  /** Sign-up (where the operator switched it on): e-mails a link that creates the account. */
  signup(body: {
    email: string;
    password: string;
    full_name?: string;
  }): Promise<SuccessReply & { msg: string }> {
    return this.request('POST', `${V0}/users/signup/`, { body });
  }
  /** Follows a sign-up's link: creates the account. */
  verifySignup(token: string): Promise<SuccessReply & { msg: string; email: string }> {
    return this.request('POST', `${V0}/users/signup/verify/`, { body: { token } });
  }
  /** E-mails a password reset link (the same answer whether or not the e-mail has an account). */
  requestPasswordReset(email: string): Promise<SuccessReply & { msg: string }> {
    return this.request('POST', `${V0}/users/password-reset/`, { body: { email } });
  }
  /** Sets a new password with a reset link's token. */
  confirmPasswordReset(token: string, password: string): Promise<SuccessReply & { msg: string }> {
    return this.request('POST', `${V0}/users/password-reset/confirm/`, { body: { token, password } });
  }
  /** Changes the caller's password; its other sessions end. */
  changePassword(currentPassword: string, newPassword: string): Promise<SuccessReply & { msg: string }> {
    return this.request('PUT', `${V0}/users/password/`, {
      body: { current_password: currentPassword, new_password: newPassword },
    });
  }
  /** Requests made with a browser-style session cookie (the CLI's sign-in flow). */
  withCookie(cookie: string): RequestOptions['headers'] {
    // A cookie-authenticated write must carry the anti-forgery header; a CLI is not a browser.
    return { cookie, 'x-openrig-csrf': '1' };
  }
  /** Ends the session this client presents (its session key). */
  logout(): Promise<SuccessReply> {
    return this.request('POST', `${V0}/users/logout/`, { body: {} });
  }
  /** Ends every session of the account, CLI and browser; API keys stay valid. */
  logoutEverywhere(): Promise<SuccessReply & { sessions_ended: number }> {
    return this.request('DELETE', `${V0}/users/sessions/`, { body: {} });
  }

  // Offers and instances
  searchOffers(body: SearchBody): Promise<{ offers: OfferRow[] }> {
    return this.request('POST', `${V0}/bundles/`, { body });
  }
  gpuNames(): Promise<{ gpu_names: string[] }> {
    return this.request('GET', `${V0}/gpu_names/unique/`);
  }
  /** One idempotency key per call: a retried request never rents twice. */
  createInstance(
    offerId: number,
    body: CreateInstanceBody | CreateFromTemplateBody,
    idempotencyKey: string = newIdempotencyKey(),
  ): Promise<CreateInstanceReply> {
    return this.request('PUT', `${V0}/asks/${offerId}/`, {
      body: { client_id: 'me', ...body },
      headers: { 'idempotency-key': idempotencyKey },
    });
  }
  listInstances(): Promise<{ instances_found: number; instances: InstanceRow[] }> {
    return this.request('GET', `${V0}/instances/`, { query: { owner: 'me' } });
  }
  async getInstance(id: number): Promise<Instance | null> {
    const r = await this.request<InstanceEnvelope>('GET', `${V0}/instances/${id}/`, {
      query: { owner: 'me' },
    });
    return r.instances ?? null;
  }
  /** A signed, expiring link to one of the instance's gateway ports (docs/gateway.md). */
  gatewayLink(id: number, port?: number): Promise<SuccessReply & { url: string; expires_at: number }> {
    return this.request('POST', `${V0}/instances/${id}/gateway-link/`, {
      body: port === undefined ? {} : { port },
    });
  }
  setInstanceState(id: number, state: 'stopped' | 'running'): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/instances/${id}/`, { body: { state } });
  }
  labelInstance(id: number, label: string): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/instances/${id}/`, { body: { label } });
  }
  /** Asks the host for the instance's logs; the text is then read at `result_url` (no key). */
  requestLogs(
    id: number,
    o: { tail?: number; filter?: string; daemon?: boolean } = {},
  ): Promise<{ result_url: string; msg: string }> {
    const body: Record<string, string> = {};
    if (o.tail !== undefined) body.tail = String(o.tail);
    if (o.filter !== undefined) body.filter = o.filter;
    if (o.daemon) body.daemon_logs = 'true';
    return this.request('PUT', `${V0}/instances/request_logs/${id}/`, { body });
  }
  /** `result_url` answers once the host has done it; absent when a reboot was already under way. */
  rebootInstance(id: number): Promise<RestartReply> {
    return this.request('PUT', `${V0}/instances/reboot/${id}/`, { body: {} });
  }
  recycleInstance(id: number): Promise<RestartReply> {
    return this.request('PUT', `${V0}/instances/recycle/${id}/`, { body: {} });
  }
  /** A new configuration; the host recreates the container from it (its disk starts afresh). */
  updateInstance(id: number, body: UpdateInstanceBody): Promise<UpdateInstanceReply> {
    return this.request('PUT', `${V0}/instances/update_template/${id}/`, { body: { id, ...body } });
  }
  executeCommand(id: number, command: string): Promise<{ result_url: string }> {
    return this.request('PUT', `${V0}/instances/command/${id}/`, { body: { command } });
  }
  destroyInstance(id: number): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/instances/${id}/`, { body: {} });
  }
  /** The public key lines an instance accepts. */
  async instanceSshKeys(instanceId: number): Promise<string[]> {
    const r = await this.request<{ ssh_keys?: { public_key?: string }[] }>(
      'GET',
      `${V0}/instances/${instanceId}/ssh/`,
    );
    return (r.ssh_keys ?? []).map((k) => String(k.public_key ?? ''));
  }
  attachSshKey(instanceId: number, sshKey: string): Promise<SuccessReply> {
    return this.request('POST', `${V0}/instances/${instanceId}/ssh/`, { body: { ssh_key: sshKey } });
  }

  // Templates
  createTemplate(body: CreateTemplateBody): Promise<TemplateReply> {
    return this.request('POST', `${V0}/template/`, { body });
  }
  /** `filters` are `{field: {op: value}}` (docs/templates.md), sent as select_filters. */
  searchTemplates(q: { filters?: Record<string, unknown>; limit?: number } = {}): Promise<TemplatesReply> {
    return this.request('GET', `${V0}/template/`, {
      query: {
        select_filters: q.filters === undefined ? undefined : JSON.stringify(q.filters),
        limit: q.limit,
      },
    });
  }
  deleteTemplate(hashId: string): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/template/`, { body: { hash_id: hashId } });
  }

  // Account environment variables (the official CLI's /secrets/ calls)
  envVars(): Promise<EnvVarsReply> {
    return this.request('GET', `${V0}/secrets/`);
  }
  createEnvVar(name: string, value: string): Promise<SuccessReply> {
    return this.request('POST', `${V0}/secrets/`, { body: { key: name, value } });
  }
  updateEnvVar(name: string, value: string): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/secrets/`, { body: { key: name, value } });
  }
  deleteEnvVar(name: string): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/secrets/`, { body: { key: name } });
  }

  // The account's audit log and login addresses
  auditLogs(limit?: number): Promise<AuditLogRow[]> {
    return this.request('GET', `${V0}/audit_logs/`, { query: { limit } });
  }
  ipAddresses(): Promise<IpAddrsReply> {
    return this.request('GET', `${V0}/users/me/ipaddrs`, { query: { owner: 'me' } });
  }

  // Machines
  async listMachines(): Promise<MachineRow[]> {
    return (await this.machines()).machines;
  }
  /** The caller's machines with the operator's rule for how an unverified one becomes verified. */
  async machines(): Promise<{ machines: MachineRow[]; verification_rule?: string }> {
    const r = await this.request<{ machines: MachineRow[]; verification_rule?: string }>(
      'GET',
      `${V0}/machines/`,
    );
    return { machines: r.machines ?? [], verification_rule: r.verification_rule };
  }
  /** Lists the whole machine (the console's form); a price left out keeps the one it has. */
  listMachineAtPrices(
    machineId: number,
    prices: { price_gpu?: number; price_disk?: number },
  ): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/machines/${machineId}/list/`, { body: prices });
  }
  /** Unlists the whole machine (the console's form); its renters keep their instances. */
  unlistMachineById(machineId: number): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/machines/${machineId}/unlist/`, { body: {} });
  }
  /** `price_gpu` and `price_min_bid` are $/hour per GPU, `price_disk` $/GB-month. */
  listMachine(
    machineId: number,
    prices: { price_gpu?: number; price_disk?: number; price_min_bid?: number; end_date?: number },
  ): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/machines/create_asks/`, {
      body: compact({ machine: machineId, ...prices }),
    });
  }
  unlistMachine(machineId: number): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/machines/${machineId}/asks/`, { body: {} });
  }
  /** Deletes one of the caller's machines (refused while a client's instance on it is live). */
  deleteMachine(machineId: number): Promise<DeleteMachineReply> {
    return this.request('POST', `${V0}/machines/${machineId}/force_delete/`, { body: {} });
  }
  /**
   * What renters paid for the caller's machines from UTC day `from` through day `to` (days since
   * 1970-01-01, both included), all machines or the one `machine`. The server's defaults: `from`
   * yesterday, `to` the later of `from` and yesterday.
   */
  machineEarnings(q: { from?: number; to?: number; machine?: number } = {}): Promise<MachineEarnings> {
    return this.request('GET', `${V0}/users/me/machine-earnings`, {
      query: compact({ sday: q.from, eday: q.to, machid: q.machine }),
    });
  }

  // Host trust (docs/trust.md) and payouts (docs/payouts.md)
  /** A machine's reliability with the record and factors it is computed from (its host). */
  machineReliability(machineId: number): Promise<MachineReliability> {
    return this.request('GET', `${V0}/machines/${machineId}/reliability/`);
  }
  /** A machine's verification state, its history (newest first) and its latest benchmark rows. */
  machineVerification(machineId: number): Promise<MachineVerification> {
    return this.request('GET', `${V0}/machines/${machineId}/verification`);
  }
  /** Renters' reports of problems with one of the caller's machines, newest first. */
  machineReports(machineId: number): Promise<MachineReport[]> {
    return this.request('GET', `${V0}/machines/${machineId}/reports/`);
  }
  /** A renter's report of a problem with a machine it rented (one a machine a UTC day). */
  reportMachine(
    machineId: number,
    problem: ReportProblem,
    message: string,
  ): Promise<SuccessReply & { report: MachineReport }> {
    return this.request('POST', `${V0}/machines/${machineId}/reports/`, { body: { problem, message } });
  }
  /** The caller's machines with their reliability parts and report counts. */
  async hostTrust(): Promise<HostTrustMachine[]> {
    const r = await this.request<{ machines?: HostTrustMachine[] }>('GET', `${V0}/trust/machines/`);
    return r.machines ?? [];
  }
  /** `search benchmarks`: rows of live machines, newest first; filters as `{field: {op: value}}`. */
  searchBenchmarks(filters: Record<string, unknown> = {}, limit?: number): Promise<BenchmarkRow[]> {
    return this.request('GET', `${V0}/benchmarks`, {
      query: compact({ select_filters: JSON.stringify(filters), limit }),
    });
  }
  /** The caller's payouts as a host, newest first, and where it is paid. */
  myPayouts(status?: 'pending' | 'paid' | 'failed'): Promise<MyPayouts> {
    return this.request('GET', `${V0}/payouts/`, { query: compact({ status }) });
  }
  /** Where the caller is paid; method `none` forgets it. */
  setPayoutDestination(
    method: PayoutMethod,
    destination?: string,
  ): Promise<SuccessReply & { destination: PayoutDestination | null }> {
    return this.request('PUT', `${V0}/payouts/destination/`, {
      body: method === 'none' ? { method } : { method, destination: destination ?? '' },
    });
  }

  /** An instance's GPU utilisation, GPU memory and disk use over its life (openrig's own). */
  usageHistory(instanceId: number): Promise<UsageHistory> {
    return this.request('GET', `${V0}/instances/${instanceId}/usage-history/`);
  }

  /** The balance and what the live instances cost now. */
  billingSummary(): Promise<BillingSummary> {
    return this.request('GET', `${V0}/billing/`);
  }
  /** The latest rows of the ledger, newest first. */
  ledger(limit?: number): Promise<LedgerPage> {
    return this.request('GET', `${V0}/billing/charges/`, { query: { limit } });
  }

  /** The billing history (the credits, and the charges unless `creditsOnly`); unix seconds. */
  invoices(q: { sdate?: number; edate?: number; creditsOnly?: boolean } = {}): Promise<Invoices> {
    return this.request('GET', `${V0}/users/me/invoices`, {
      query: compact({
        owner: 'me',
        sdate: q.sdate,
        edate: q.edate,
        inc_charges: q.creditsOnly ? 'false' : undefined,
      }),
    });
  }

  // Maintenance
  scheduleMaintenanceBatch(body: MaintBatchBody): Promise<MaintBatchReply> {
    // A 200 has success true; per-entry failures are inside `results`.
    return this.request('POST', `${V0}/machines/maintenances/batch`, { body, allowUnsuccessful: true });
  }
  async listMaintenances(machineIds?: number[]): Promise<MaintenanceWindow[]> {
    const query =
      machineIds && machineIds.length > 0
        ? { owner: 'me', machine_ids: JSON.stringify(machineIds) }
        : { owner: 'me' };
    // The reply is a bare array of rows.
    return this.request<MaintenanceWindow[]>('GET', `${V0}/machines/maintenances`, { query });
  }
  cancelMaintenance(machineId: number): Promise<CancelMaintenanceReply> {
    return this.request('PUT', `${V0}/machines/${machineId}/cancel_maint/`, { body: {} });
  }
  cancelMaintenanceBatch(machineIds: number[]): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/machines/maintenances/batch`, { body: { machine_ids: machineIds } });
  }

  // Webhooks and the event feed
  createWebhook(body: {
    url: string;
    events?: string[];
    description?: string;
  }): Promise<{ webhook: Webhook; secret: string }> {
    return this.request('POST', `${V0}/webhooks/`, { body });
  }
  async listWebhooks(): Promise<Webhook[]> {
    return (await this.request<{ webhooks: Webhook[] }>('GET', `${V0}/webhooks/`)).webhooks ?? [];
  }
  deleteWebhook(id: number): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/webhooks/${id}/`, { body: {} });
  }
  rotateWebhookSecret(id: number): Promise<{ webhook: Webhook; secret: string }> {
    return this.request('POST', `${V0}/webhooks/${id}/rotate-secret/`, { body: {} });
  }
  testWebhook(id: number): Promise<{ delivery_id: number; event_id: string }> {
    return this.request('POST', `${V0}/webhooks/${id}/test/`, { body: {} });
  }
  listEvents(q: { after?: string; types?: string; limit?: number } = {}): Promise<EventsPage> {
    return this.request('GET', `${V0}/events/`, { query: q });
  }

  // API keys and SSH keys
  createApiKey(name: string | undefined, permissions?: unknown): Promise<ApiKey> {
    return this.request('POST', `${V0}/auth/apikeys/`, { body: compact({ name, permissions }) });
  }
  async listApiKeys(): Promise<ApiKeyRow[]> {
    return (await this.request<{ apikeys: ApiKeyRow[] }>('GET', `${V0}/auth/apikeys/`)).apikeys ?? [];
  }
  async getApiKey(id: number): Promise<ApiKey> {
    return (await this.request<{ apikey: ApiKey }>('GET', `${V0}/auth/apikeys/${id}/`)).apikey;
  }
  deleteApiKey(id: number): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/auth/apikeys/${id}/`, { body: {} });
  }
  addSshKey(sshKey: string): Promise<SshKey & SuccessReply> {
    return this.request('POST', `${V0}/ssh/`, { body: { ssh_key: sshKey } });
  }
  async listSshKeys(): Promise<SshKeyRow[]> {
    return (await this.request<{ ssh_keys: SshKeyRow[] }>('GET', `${V0}/ssh/`)).ssh_keys ?? [];
  }
  deleteSshKey(id: number): Promise<SuccessReply> {
    return this.request('DELETE', `${V0}/ssh/${id}/`, { body: {} });
  }

  // Two-factor authentication
  tfaStatus(): Promise<TfaStatus> {
    return this.request('GET', `${V0}/tfa/status/`);
  }
  tfaTotpSetup(): Promise<{ secret: string; provisioning_uri: string }> {
    return this.request('POST', `${V0}/tfa/totp-setup/`, { body: {} });
  }
  tfaAuthorizeNew(b: {
    tfa_method?: TfaMethodName;
    tfa_method_id?: number;
    backup_code?: string;
  }): Promise<SuccessReply & { secret?: string }> {
    return this.request('POST', `${V0}/tfa/authorize-new-method/`, { body: compact(b) });
  }
  tfaAuthorizeNewConfirm(b: { code: string; secret: string }): Promise<SuccessReply> {
    return this.request('PUT', `${V0}/tfa/authorize-new-method/`, { body: b });
  }
  tfaConfirmNew(b: {
    tfa_method: 'sms' | 'totp';
    code: string;
    secret: string;
    phone_number?: string;
    label?: string;
  }): Promise<SuccessReply & { backup_codes?: string[] }> {
    return this.request('POST', `${V0}/tfa/confirm-new/`, { body: compact(b) });
  }
  tfaLogin(b: TfaVerification & { admin?: boolean }): Promise<CurrentUser> {
    return this.request('POST', `${V0}/tfa/`, { body: compact(b) });
  }
  /** `secret`: the sign-in challenge's, when the code completes a sign-in. */
  tfaSendSms(b: {
    phone_number?: string;
    tfa_method_id?: number;
    secret?: string;
  }): Promise<SuccessReply & { secret: string }> {
    return this.request('POST', `${V0}/tfa/sms/`, { body: compact(b) });
  }
  tfaResendSms(b: {
    phone_number?: string;
    tfa_method_id?: number;
    secret?: string;
  }): Promise<SuccessReply & { secret: string }> {
    return this.request('POST', `${V0}/tfa/sms/resend/`, { body: compact(b) });
  }
  tfaSendEmail(b: { secret?: string } = {}): Promise<SuccessReply & { secret: string }> {
    return this.request('POST', `${V0}/tfa/email/`, { body: compact(b) });
  }
  tfaDelete(
    b: TfaVerification & { target_id?: number },
  ): Promise<SuccessReply & { remaining_methods?: number }> {
    return this.request('DELETE', `${V0}/tfa/`, { body: compact(b) });
  }
  tfaUpdate(b: {
    tfa_method_id?: number;
    tfa_method?: 'sms' | 'totp';
    label?: string;
    is_primary?: boolean;
  }): Promise<SuccessReply & { method?: unknown }> {
    // An empty label is sent: it clears the method's label.
    const body = b.label === undefined ? compact(b) : { ...compact(b), label: b.label };
    return this.request('PUT', `${V0}/tfa/update/`, { body });
  }
  tfaRegenBackupCodes(b: TfaVerification): Promise<SuccessReply & { backup_codes: string[] }> {
    return this.request('PUT', `${V0}/tfa/regen-backup-codes/`, { body: compact(b) });
  }
}
