// Request and response bodies of the API as the client sees them (docs/api.md). Each type is
// derived from the schema the server validates and serialises with (src/contract/schemas/):
// adding a field to a reply is one edit, its schema there. Where a client relies on a field being
// always there, the type says so next to the schema it derives from. Object schemas that do not
// close themselves give an index signature: the CLI's `--raw` prints whatever the server sent.
import type { FromSchema } from 'json-schema-to-ts';
import type * as C from './schemas/common.js';
import type * as I from './schemas/instances.js';
import type * as O from './schemas/offers.js';
import type * as M from './schemas/machines.js';
import type * as A from './schemas/accounts.js';
import type * as AU from './schemas/audit.js';
import type * as SK from './schemas/ssh-keys.js';
import type * as EV from './schemas/env-vars.js';
import type * as T from './schemas/templates.js';
import type * as K from './schemas/api-keys.js';
import type * as MT from './schemas/maintenance.js';
import type * as B from './schemas/billing.js';
import type * as W from './schemas/webhooks.js';
import type * as TF from './schemas/two-factor.js';
import type * as UH from './schemas/usage-history.js';

/** T with the fields K always there (the server writes them in every reply of the type). */
export type WithRequired<T, K extends keyof T> = T & Required<Pick<T, K>>;

/** A reply type the server always writes whole: every declared field there, at any depth. */
export type Complete<T> = T extends readonly (infer U)[]
  ? Complete<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]-?: Complete<T[K]> }
    : T;

/** A type without the open index signatures json-schema-to-ts gives object schemas. */
export type Declared<T> = T extends readonly (infer U)[]
  ? Declared<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : K]: Declared<T[K]> }
    : T;

export type InstanceStatus =
  'loading' | 'running' | 'exited' | 'unknown' | 'offline' | 'stopped' | 'created' | null;

/**
 * An instance row, as the server's response schema declares it (contract/schemas/instances.ts):
 * every field it sends. `id` and `actual_status` are always there (instanceView writes every field;
 * the v1 list's select_cols may leave out the others).
 */
export type Instance = WithRequired<FromSchema<typeof I.instanceSchema>, 'id' | 'actual_status'>;

export type InstancesList = FromSchema<typeof I.instancesList> & {
  instances_found: number;
  instances: Instance[];
};

/** The v1 list's page (GET /api/v1/instances). */
export type InstancesPage = FromSchema<typeof I.instancesPage> & { instances: Instance[] };

/** `{instances: {...}}`, or `{instances: null}` when it is not the caller's or does not exist. */
export type InstanceEnvelope = FromSchema<typeof I.instanceEnvelope> & { instances: Instance | null };

/** An offer row (fields in docs/market.md), as contract/schemas/offers.ts declares it. */
export type Offer = WithRequired<FromSchema<typeof O.offerSchema>, 'id'>;

export type OffersReply = FromSchema<typeof O.offersReply> & { offers: Offer[] };

export type FilterOp = 'eq' | 'neq' | 'gt' | 'gte' | 'lt' | 'lte' | 'in' | 'notin';
export type FilterValue = string | number | boolean | null | (string | number | boolean | null)[];

/**
 * The flat search body: each filter field at top level as `{op: value}`. The server checks it with
 * its filter compiler, not a schema (contract/schemas/offers.ts: an open object), so its shape is
 * named here.
 */
export interface SearchBody {
  order?: [string, 'asc' | 'desc'][];
  type?: 'on-demand' | 'bid' | 'reserved';
  limit?: number;
  allocated_storage?: number;
  [field: string]: unknown;
}

/** The create body (contract/schemas/instances.ts); the client always sends image and disk. */
export type CreateInstanceBody = FromSchema<typeof I.createInstanceBody> & { image: string; disk: number };

/**
 * A create-instance body naming a template (docs/templates.md): the template gives image, env,
 * onstart, runtype and disk where the body leaves them out, so those are optional here.
 */
export type CreateFromTemplateBody = FromSchema<typeof I.createInstanceBody> & { template_hash_id: string };

export type CreateInstanceReply = Required<Declared<FromSchema<typeof I.createInstanceReply>>>;

export type SuccessReply = FromSchema<typeof C.successSchema>;

/** POST /machines/{id}/force_delete/: the machine is deleted, with what went with it. */
export type DeleteMachineReply = WithRequired<
  FromSchema<typeof M.deleteMachineReply>,
  'machine_id' | 'instances_destroyed' | 'maintenances_cancelled'
>;

/**
 * update instance's body (docs/market.md, "Updating an instance"): only what changes; a template
 * (by hash_id or id) gives its image, env, onstart and runtype under the fields given.
 */
export type UpdateInstanceBody = FromSchema<typeof I.updateInstanceBody>;

/** The instance as the update wrote it: loading until its host has recreated it (stopped: stays). */
export type UpdateInstanceReply = FromSchema<typeof I.updateInstanceReply> & {
  msg: string;
  updated_instance: Instance;
};

/** Reboot / recycle: result_url answers once the host has done it (absent: one was under way). */
export type RestartReply = FromSchema<typeof I.remoteRequestReply> & { msg: string };

export type MaintenanceCategory = (typeof MT.MAINTENANCE_CATEGORIES)[number];

/** POST /machines/maintenances/batch (contract/schemas/maintenance.ts). */
export type MaintBatchBody = Declared<FromSchema<typeof MT.scheduleBatchBody>>;

/** One machine's outcome in a batch (contract/schemas/maintenance.ts). */
export type MaintBatchEntry = WithRequired<
  Declared<FromSchema<typeof MT.maintenanceEntrySchema>>,
  'success' | 'machine_id'
>;

export type MaintBatchReply = WithRequired<
  Declared<FromSchema<typeof MT.maintenanceBatchReply>>,
  'success'
> & {
  results: MaintBatchEntry[];
};

/** A maintenance window, as machines, instances and offers show it (contract/schemas/common.ts). */
export type Maintenance = WithRequired<
  FromSchema<typeof C.maintenanceWindowSchema>,
  'machine_id' | 'start_time' | 'end_time' | 'duration_hours' | 'maintenance_category'
>;

/** A host's machine, as contract/schemas/machines.ts declares it. */
export type Machine = WithRequired<FromSchema<typeof M.machineSchema>, 'id'>;

/** An API key (contract/schemas/api-keys.ts); `key` only in the reply that created it. */
export type ApiKey = WithRequired<FromSchema<typeof K.createdApiKey>, 'id'>;

/** An SSH public key of the account (contract/schemas/ssh-keys.ts). */
export type SshKey = WithRequired<FromSchema<typeof SK.sshKeySchema>, 'id'>;

/**
 * The user object (contract/schemas/accounts.ts); its account settings (AccountSettings) come with
 * GET /users/current. `ssh_key` is the account's oldest SSH public key (null when it has none),
 * absent for a key without SSH-key read; `fullname` is full_name again, under the name the official
 * CLI's user table reads.
 */
export type User = WithRequired<FromSchema<typeof A.userSchema>, 'id' | 'email'>;

type UserFields = Declared<FromSchema<typeof A.userSchema>>;

/** An account's billing address, field by field (null: not given). */
export type BillingAddress = Required<
  Pick<
    UserFields,
    | 'billaddress_line1'
    | 'billaddress_line2'
    | 'billaddress_city'
    | 'billaddress_zip'
    | 'billaddress_country'
    | 'billaddress_taxinfo'
  >
>;

/**
 * The account settings GET /users/current shows besides the user row's own fields, and PUT
 * /users/ changes: the billing address, and the balance.low alert (on or off; its threshold in
 * dollars, or the one last given while it is off; null when none).
 */
export type AccountSettings = BillingAddress &
  Required<Pick<UserFields, 'balance_threshold_enabled' | 'balance_threshold'>>;

/**
 * PUT /users/: the account settings a user changes (contract/schemas/accounts.ts); a field left out
 * keeps its value, null or "" clears a billing field.
 */
export type AccountSettingsBody = Declared<FromSchema<typeof A.accountSettingsBody>>;

export type AccountSettingsReply = WithRequired<
  FromSchema<typeof A.accountSettingsReply>,
  'success' | 'msg'
> & {
  user: User;
};

/**
 * A 2FA method (contract/schemas/two-factor.ts): the status reply writes every field, the masked
 * `phone_number` null for a TOTP method.
 */
export type TfaMethod = Omit<Complete<FromSchema<typeof TF.methodSchema>>, 'phone_number'> & {
  phone_number?: string | null;
};

export type TfaStatus = Omit<Complete<FromSchema<typeof TF.statusReply>>, 'methods'> & {
  methods: TfaMethod[];
};

/** The values of `tfa_method` the server accepts (any case; the schema leaves it to the server). */
export type TfaMethodName = 'sms' | 'totp' | 'email';

/**
 * The verification fields shared by the 2FA login, DELETE tfa/ and regen-backup-codes (empty
 * ones left out).
 */
export type TfaVerification = Omit<
  Declared<NonNullable<FromSchema<typeof TF.verificationBody>>>,
  'tfa_method' | 'tfa_method_id'
> & { tfa_method?: TfaMethodName; tfa_method_id?: number };

/** A registered webhook endpoint (contract/schemas/webhooks.ts; the secret only in create and rotate replies). */
export type Webhook = Declared<FromSchema<typeof W.webhookSchema>>;

/** One event, as the feed lists it and as a webhook delivers it. */
export type FeedEvent = FromSchema<typeof W.eventSchema>;

export type EventsPage = Pick<FromSchema<typeof W.eventsPage>, 'events' | 'has_more' | 'next_after'>;

/** What renters paid over a period, in USD: `gpu` is compute, `sto` disk, `bw*` bandwidth (always 0). */
export type EarningsAmounts = Complete<FromSchema<typeof B.earningsSchema>>;

/**
 * GET /users/me/machine-earnings: what renters paid for the caller's machines from UTC day `sday`
 * through `eday` (days since 1970-01-01), in total, per machine (every machine, idle ones at 0)
 * and per day (every day of the range; `date` as YYYY-MM-DD); `start` and `end` in Unix seconds.
 */
export type MachineEarnings = Complete<FromSchema<(typeof B.machineEarnings.schema.response)[200]>>;

/**
 * An item of the billing history (GET /users/me/invoices): a charge, summed per instance, UTC
 * day and kind, or a payment (a credit added to the account). Amounts in USD.
 */
export type InvoiceItem = WithRequired<
  Declared<FromSchema<typeof B.invoiceItemSchema>>,
  'type' | 'description' | 'amount' | 'timestamp' | 'instance_id'
>;

/** GET /users/me/invoices: the history from `sdate` to `edate` (unix seconds), oldest first. */
export type Invoices = Omit<
  Complete<FromSchema<(typeof B.showInvoices.schema.response)[200]>>,
  'invoices'
> & {
  invoices: InvoiceItem[];
};

/**
 * A saved instance configuration (docs/templates.md; contract/schemas/templates.ts); `hash_id`
 * names this version of it, `image` is the image without its tag, `env` its Docker options
 * (`-e NAME=VALUE -p 8080:8080`), `recommended_disk_space` the GB of an instance created from it
 * when the create gives none.
 */
export type Template = WithRequired<
  FromSchema<typeof T.templateSchema>,
  | 'id'
  | 'hash_id'
  | 'creator_id'
  | 'name'
  | 'image'
  | 'tag'
  | 'env'
  | 'onstart'
  | 'runtype'
  | 'recommended_disk_space'
  | 'private'
  | 'created_at'
  | 'updated_at'
>;

/** POST /template/: the fields of a new template; those left out take the server's defaults. */
export type CreateTemplateBody = FromSchema<typeof T.templateBody> & { name: string; image: string };

export type TemplateReply = WithRequired<FromSchema<typeof T.templateReply>, 'success'> & {
  template: Template;
};

/** GET /template/: the caller's templates and everyone's public ones, newest first. */
export type TemplatesReply = WithRequired<FromSchema<typeof T.templatesReply>, 'success'> & {
  templates: Template[];
};

/** GET /api/v0/secrets/: the account's environment variables, NAME: value (docs/env-vars.md). */
export type EnvVarsReply = WithRequired<FromSchema<typeof EV.envVarsReply>, 'success' | 'secrets'>;

/**
 * One row of GET /api/v0/audit_logs/ (docs/security.md, "The audit log"; contract/schemas/audit.ts).
 * `args` holds the path parameters, the query (credentials redacted) and the NAMES of the body's
 * fields.
 */
export type AuditLogRow = WithRequired<
  Declared<FromSchema<typeof AU.auditRowSchema>>,
  'id' | 'created_at' | 'ip_address' | 'api_key_id' | 'credential' | 'api_route' | 'status'
> & {
  args: { path?: Record<string, string>; query?: Record<string, string | string[]>; body?: string[] };
};

/** GET /api/v0/users/me/ipaddrs: the addresses that used the account, most recently seen first. */
export type IpAddrsReply = WithRequired<FromSchema<typeof AU.ipAddrsReply>, 'success'> & {
  results: Required<Declared<FromSchema<typeof AU.ipaddrSchema>>>[];
};

/**
 * GET /instances/{id}/usage-history/ (openrig's own): the instance's measurements, oldest first:
 * one a minute for the last day, one an hour before (`span_s`); `t` in unix seconds.
 */
export type UsageHistory = Complete<FromSchema<(typeof UH.usageHistory.schema.response)[200]>>;
