// `openrig serve`: one process, or a cluster's primary or worker (cluster.ts), over the
// composition root (main.ts). Apart from main.ts so that cluster.ts, which starts servers, and
// this command, which starts the cluster, import main.ts and not each other.
// The composition root is loaded only where it runs: a cluster's primary, which migrates and
// waits for its workers, loads the server's modules once they listen (cluster.ts), so that on a
// machine with as many cores as workers it takes no CPU from their start-up.
import { prepareServe, type PreparedServe, type ServeOptions } from './cluster-fork.js';

/** `openrig serve`; `prepared` is prepareServe's result when the caller has already run it. */
export async function serveCommand(
  o: ServeOptions,
  prepared: PreparedServe = prepareServe(o),
): Promise<void> {
  const { config, workers, forked } = prepared;
  const { isClusterWorker, runPrimary, runWorker } = await import('./cluster.js');
  if (isClusterWorker()) return runWorker(config);
  if (workers > 1) return runPrimary(config, workers, forked);
  const { onTermination, startServer } = await import('./main.js');
  const server = await startServer(config);
  onTermination((sig) => {
    server.deps.log.info({ signal: sig }, 'shutting down');
    return server.close();
  });
  if (o.demo) {
    const { startDemo } = await import('./demo.js');
    await startDemo(server);
  } else {
    process.stdout.write(`openrig listening on ${server.url}\n`);
  }
}
