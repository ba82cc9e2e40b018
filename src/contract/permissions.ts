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
