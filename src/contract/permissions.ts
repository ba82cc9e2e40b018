// API key scopes. A key's `permissions` is either omitted / "full" (every
// call the owner may make), "read_only" (every family, read access), or an object that names
// families: `{"instances": "write", "offers": "read"}`. A family not named is not allowed.
// "write" includes "read". Reads are GET calls; every other method is a write.
export const PERMISSION_FAMILIES = [
  'user', // users/current, login-related account reads
  'api_keys', // /auth/apikeys
  'ssh_keys', // /ssh and attaching keys to instances
  'offers', // /bundles, /gpu_names
  'instances', // /asks (create), /instances
  'machines', // host calls: /machines, listing, agent protocol
  'maintenance', // /machines/maintenances, dnotify, cancel_maint
  'tfa', // /tfa
  'billing', // balance, charges
  'webhooks', // /webhooks and the /events feed
  'team', // /team: reading a team's members and roles; inviting, removing, editing roles
] as const;

export type PermissionFamily = (typeof PERMISSION_FAMILIES)[number];
export type Access = 'read' | 'write';
export type Permissions = Partial<Record<PermissionFamily, Access>>;

export function allows(perms: Permissions | null, family: PermissionFamily, access: Access): boolean {
  if (perms === null) return true;
  const granted = perms[family];
  if (!granted) return false;
  return granted === 'write' || access === 'read';
}

/** Normalises the create-request value; returns an error message for a bad one. */
export function parsePermissions(
  raw: unknown,
): { ok: true; value: Permissions | null } | { ok: false; msg: string } {
  if (raw === undefined || raw === null || raw === 'full') return { ok: true, value: null };
  if (isMarketplacePermissions(raw)) return parseMarketplacePermissions(raw);
  if (raw === 'read_only') {
    const all: Permissions = {};
    for (const f of PERMISSION_FAMILIES) all[f] = 'read';
    return { ok: true, value: all };
  }
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    return {
      ok: false,
      msg: 'permissions must be "full", "read_only" or an object of family: "read"|"write"',
    };
  }
  const out: Permissions = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (!(PERMISSION_FAMILIES as readonly string[]).includes(k)) {
      return {
        ok: false,
        msg: `permissions: unknown family ${JSON.stringify(k)} (one of ${PERMISSION_FAMILIES.join(', ')})`,
      };
    }
    if (v !== 'read' && v !== 'write')
      return { ok: false, msg: `permissions.${k} must be "read" or "write"` };
    out[k as PermissionFamily] = v;
  }
  return { ok: true, value: out };
}

// The marketplace's own permission format, as its official client sends it from a permission
// file: `{"api": {CATEGORY: constraints, …}}`. Each category maps onto openrig's families; an
// empty constraints object means the whole category. Nothing is widened or dropped: a category
// openrig has no equivalent for, or constraints narrower than a whole family, is refused.
export const CATEGORY_FAMILIES: Record<string, [PermissionFamily[], Access]> = {
  instance_read: [['instances'], 'read'],
  instance_write: [['instances'], 'write'],
  user_read: [['user', 'api_keys', 'ssh_keys', 'tfa'], 'read'],
  user_write: [['user', 'api_keys', 'ssh_keys', 'tfa'], 'write'],
  billing_read: [['billing'], 'read'],
  billing_write: [['billing'], 'write'],
  machine_read: [['machines', 'maintenance'], 'read'],
  machine_write: [['machines', 'maintenance'], 'write'],
  misc: [['offers'], 'read'],
  team_read: [['team'], 'read'],
  team_write: [['team'], 'write'],
};

/** Categories of the marketplace format that openrig cannot grant, with the reason. */
const CATEGORIES_WITHOUT_FAMILY: Record<string, string> = {};

export const MARKETPLACE_CATEGORIES = Object.keys(CATEGORY_FAMILIES);

/** True when the value is in the marketplace format (an object with an "api" member). */
export function isMarketplacePermissions(raw: unknown): raw is { api: unknown } {
  return typeof raw === 'object' && raw !== null && !Array.isArray(raw) && 'api' in raw;
}

/** Maps `{"api": {category: constraints}}` onto families; an error message names the category. */
export function parseMarketplacePermissions(
  raw: unknown,
): { ok: true; value: Permissions } | { ok: false; msg: string } {
  if (!isMarketplacePermissions(raw)) return { ok: false, msg: 'permissions must have an "api" object' };
  const extra = Object.keys(raw).filter((k) => k !== 'api');
  if (extra.length > 0)
    return { ok: false, msg: `permissions: unknown member ${JSON.stringify(extra[0])} (only "api")` };
  const api = raw.api;
  if (typeof api !== 'object' || api === null || Array.isArray(api))
    return { ok: false, msg: 'permissions.api must be an object of category: {}' };
  const out: Permissions = {};
  for (const [category, constraints] of Object.entries(api as Record<string, unknown>)) {
    const why = CATEGORIES_WITHOUT_FAMILY[category];
    if (why)
      return {
        ok: false,
        msg: `permissions.api: category ${JSON.stringify(category)} is not supported (${why})`,
      };
    const mapped = CATEGORY_FAMILIES[category];
    if (!mapped) {
      return {
        ok: false,
        msg: `permissions.api: unknown category ${JSON.stringify(category)} (one of ${MARKETPLACE_CATEGORIES.join(', ')})`,
      };
    }
    const whole =
      typeof constraints === 'object' &&
      constraints !== null &&
      !Array.isArray(constraints) &&
      Object.keys(constraints).length === 0;
    if (!whole) {
      return {
        ok: false,
        msg: `permissions.api.${category}: constraints are not supported; give {} for the whole category`,
      };
    }
    const [families, access] = mapped;
    for (const f of families) if (out[f] !== 'write') out[f] = access;
  }
  return { ok: true, value: out };
}
