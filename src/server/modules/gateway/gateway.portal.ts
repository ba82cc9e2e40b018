// Which ports of an instance the gateway serves (docs/gateway.md): the `portal` entries of its
// create body, and every TCP port of its env's `-p` requests that no entry names (owner only,
// named by their number). Pure: the instance row's view and the gateway's access check both use it.

/** A served port, as the instance row shows it. */
export interface PortalView {
  name: string;
  port: number;
  public: boolean;
  keep_prefix: boolean;
  /** The stable path on this server: `/i/ID/PORT/`. */
  path: string;
}

const PORT_KEY = /^-p\s+(?:\d{1,5}:)?(\d{1,5})(?:\/(tcp|udp))?$/;

/** The stable path of an instance's port on the server. */
export function gatewayPath(instanceId: number, port: number): string {
  return `/i/${instanceId}/${port}/`;
}

/**
 * The ports served for instance `id`: `portalJson` (instances.portal) first, then the TCP ports
 * of `env`'s `-p` requests it does not name. A malformed column serves nothing rather than fail.
 */
export function portalOf(id: number, portalJson: string, env: Record<string, string>): PortalView[] {
  const out: PortalView[] = [];
  let named: unknown = [];
  try {
    named = JSON.parse(portalJson);
  } catch {
    named = [];
  }
  for (const e of Array.isArray(named) ? (named as Record<string, unknown>[]) : []) {
    if (typeof e?.port !== 'number' || out.some((x) => x.port === e.port)) continue;
    out.push({
      name: typeof e.name === 'string' ? e.name : String(e.port),
      port: e.port,
      public: e.public === true,
      keep_prefix: e.keep_prefix === true,
      path: gatewayPath(id, e.port),
    });
  }
  for (const k of Object.keys(env)) {
    const m = PORT_KEY.exec(k.trim());
    if (!m || m[2] === 'udp') continue;
    const port = Number(m[1]);
    if (port < 1 || port > 65535 || out.some((x) => x.port === port)) continue;
    out.push({ name: String(port), port, public: false, keep_prefix: false, path: gatewayPath(id, port) });
  }
  return out;
}
