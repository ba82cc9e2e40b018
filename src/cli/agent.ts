// `openrig agent` (docs/agent.md): the host daemon.
import { CommanderError, type Command } from 'commander';
import path from 'node:path';
import type { Agent } from '../agent/daemon.js';
import type { Runtime } from '../agent/runtime.js';

const usage = (msg: string) => new CommanderError(2, 'usage', msg);

function money(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1000)
    throw usage(`${flag} must be a number of dollars from 0 to 1000 (got ${JSON.stringify(raw)})`);
  return n;
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      'run the host agent: register machines, list them, heartbeat, run the instances the server assigns',
    )
    .option('--server <url>', 'openrig server base URL (or env OPENRIG_URL)')
    .option('--api-key <key>', "the host's API key (or env OPENRIG_API_KEY)")
    .option('--gpus <spec>', 'simulate GPUs, "MODEL xN" (default: read nvidia-smi)')
    .option('--machines <n>', 'machines run by this agent', '1')
    .option('--price-gpu <dph>', 'list each machine as an on-demand offer at this $/hour per GPU')
    .option('--price-disk <dph>', 'disk price, $ per GB-month')
    .option('--runtime <name>', 'process or docker', 'process')
    .option('--state-dir <dir>', 'where the agent keeps its id and its instances', './agent-state')
    .option('--ssh-bind <addr>', "address the instances' SSH servers listen on", '0.0.0.0')
    .addHelpText(
      'after',
      '\nExample:\n  openrig agent --server http://127.0.0.1:8080 --api-key $HOST_KEY --gpus "RTX 4090x2" --price-gpu 0.4',
    )
    .action(async (o) => {
      // Loaded on demand so that other commands start without the agent's modules.
      const [
        { default: pino },
        { Agent },
        { detectGpus, describeMachines, gpuShares, parseGpusFlag },
        { ProcessRuntime },
        { dockerRuntime, DockerRuntimeUnavailable },
        { AgentFatalError },
      ] = await Promise.all([
        import('pino'),
        import('../agent/daemon.js'),
        import('../agent/hardware.js'),
        import('../agent/runtime-process.js'),
        import('../agent/runtime-docker.js'),
        import('../agent/agent-client.js'),
      ]);
      const server: string | undefined = o.server ?? process.env.OPENRIG_URL;
      const apiKey: string | undefined = o.apiKey ?? process.env.OPENRIG_API_KEY;
      if (!server || !/^https?:\/\/[^/]+/.test(server))
        throw usage('--server must be the server URL, e.g. http://127.0.0.1:8080');
      if (!apiKey) throw usage("--api-key is required: the host's API key");
      const n = Number(o.machines);
      if (!Number.isInteger(n) || n < 1 || n > 256)
        throw usage('--machines must be an integer from 1 to 256');
      if (o.runtime !== 'process' && o.runtime !== 'docker')
        throw usage('--runtime must be process or docker');
      const heartbeatRaw = process.env.OPENRIG_HEARTBEAT_S;
      const heartbeatS = heartbeatRaw ? Number(heartbeatRaw) : undefined;
      if (heartbeatS !== undefined && !(heartbeatS >= 0.1))
        throw usage('OPENRIG_HEARTBEAT_S must be a number >= 0.1');
      let gpu;
      if (o.gpus !== undefined) {
        const g = parseGpusFlag(o.gpus);
        if ('error' in g) throw usage(g.error);
        gpu = g;
      } else {
        const g = detectGpus();
        if (!g)
          throw usage(
            'no GPU found: nvidia-smi is not available or lists none; pass --gpus "MODEL xN" to simulate',
          );
        gpu = g;
      }
      const share = gpuShares(gpu, n);
      if ('error' in share) throw usage(share.error);
      const stateDir = path.resolve(o.stateDir);
      const log = pino({ level: process.env.OPENRIG_LOG_LEVEL || 'info', base: { role: 'agent' } });
      let agent: Agent | null = null;
      let runtime: Runtime;
      try {
        runtime =
          o.runtime === 'docker'
            ? dockerRuntime()
            : new ProcessRuntime({ stateDir, sshBind: o.sshBind, onExit: () => agent?.poke() });
      } catch (err) {
        if (err instanceof DockerRuntimeUnavailable) throw usage(err.message);
        throw err;
      }
      agent = new Agent({
        server,
        apiKey,
        stateDir,
        machines: describeMachines(gpu, n, stateDir),
        devices: share.devices,
        priceGpu: money('--price-gpu', o.priceGpu),
        priceDisk: money('--price-disk', o.priceDisk),
        runtime,
        heartbeatS,
        version: '0.1.0',
        log: { info: (m) => log.info(m), warn: (m) => log.warn(m), error: (m) => log.error(m) },
      });
      const a = agent;
      const onSignal = (sig: string) => {
        log.info(`${sig}: shutting down (machines go offline; instances keep running for re-adoption)`);
        a.shutdown().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      try {
        await a.start();
      } catch (err) {
        if (err instanceof AgentFatalError) {
          process.stderr.write(`openrig agent: the server refused the agent: ${err.message}\n`);
          process.exit(1);
        }
        throw err;
      }
      process.stdout.write(
        `openrig agent ${a.uid}: machines ${a.machineIds.join(', ')} registered with ${server}\n`,
      );
    });
}
