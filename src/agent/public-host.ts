// The address renters reach this agent's instances at, when `--public-host` is not given: the
// local address of a connection to the server (the interface the host's traffic leaves by). An
// agent that reaches the server over a loopback address runs on the server's own host; the local
// side of such a connection is always 127.0.0.1 whichever 127/8 address was dialled, so the
// dialled address itself is the one renters on that host use (and the instances' SSH servers,
// bound to 0.0.0.0 by default, answer there too).
import net from 'node:net';

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function defaultPublicHost(serverUrl: string, timeoutMs = 5000): Promise<string> {
  const u = new URL(serverUrl);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (isLoopback(host)) return Promise.resolve(host === 'localhost' ? '127.0.0.1' : host);
  const port = Number(u.port || (u.protocol === 'https:' ? 443 : 80));
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port });
    s.setTimeout(timeoutMs, () => {
      s.destroy();
      reject(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`));
    });
    s.once('connect', () => {
      const addr = s.localAddress;
      s.destroy();
      if (addr) resolve(addr.replace(/^::ffff:/, ''));
      else reject(new Error('the connection to the server has no local address'));
    });
    s.once('error', (err) => reject(err));
  });
}

/**
 * The address the instances' SSH servers and published ports listen on when `--ssh-bind` is not
 * given. A loopback `--public-host` (127.0.0.2 for local testing) is an address of this host that
 * only this host reaches: listening there keeps the instances on loopback, where 0.0.0.0 would
 * open them on every interface. Any other public host may be an address of a router in front of
 * this machine rather than of one of its interfaces, so the instances listen on all of them.
 */
export function sshBindFor(publicHost: string | undefined): string {
  if (publicHost !== undefined && /^127\.\d+\.\d+\.\d+$|^::1$/.test(publicHost)) return publicHost;
  return '0.0.0.0';
}
