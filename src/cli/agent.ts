// `openrig agent` (docs/agent.md): the host daemon.
import { CommanderError, type Command } from 'commander';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { logLevel } from '../server/config.js';
import type { Agent } from '../agent/daemon.js';
import type { Runtime } from '../agent/runtime.js';
import { visibilityLines } from './visibility.js';

const usage = (msg: string) => new CommanderError(2, 'usage', msg);

function money(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1000)
    throw usage(`${flag} must be a number of dollars from 0 to 1000 (got ${JSON.stringify(raw)})`);
  return n;
}

/**
 * The host's key: from OPENRIG_API_KEY or a file only its owner can read. A key on the command
 * line is refused: every process on the host can read it in /proc/PID/cmdline.
 */
/** The options of `openrig agent`, as commander parses them (defaults filled in). */
interface AgentOpts {
  /** false with --no-benchmarks. */
  benchmarks?: boolean;
  url?: string;
  server?: string;
  apiKey?: string;
  apiKeyFile?: string;
  gpus?: string;
  machines: string;
  priceGpu?: string;
  priceDisk?: string;
  runtime: string;
  stateDir: string;
  sshBind?: string;
  publicHost?: string;
  location?: string;
}

export function readAgentKey(opts: { apiKey?: string; apiKeyFile?: string }, env = process.env): string {
  if (opts.apiKey !== undefined)
    throw usage(
      '--api-key is refused: a key on the command line is readable by every process on this host (/proc/PID/cmdline); put it in OPENRIG_API_KEY or in a file of mode 0600 passed with --api-key-file',
    );
  if (opts.apiKeyFile !== undefined) {
    let st;
    try {
      st = statSync(opts.apiKeyFile);
    } catch (err) {
      throw usage(
        `--api-key-file ${opts.apiKeyFile}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
      );
    }
    if (!st.isFile()) throw usage(`--api-key-file ${opts.apiKeyFile} is not a file`);
    const mode = st.mode & 0o777;
    if ((mode & 0o077) !== 0)
      throw usage(
        `--api-key-file ${opts.apiKeyFile} has mode ${mode.toString(8).padStart(4, '0')}: other users can read it; chmod 600 it`,
      );
    const key = readFileSync(opts.apiKeyFile, 'utf8').trim();
    if (!key) throw usage(`--api-key-file ${opts.apiKeyFile} is empty`);
    return key;
  }
  const key = env.OPENRIG_API_KEY?.trim();
  if (!key)
    throw usage(
      "the host's API key is required: set OPENRIG_API_KEY or pass --api-key-file FILE (mode 0600)",
    );
  return key;
}

export function registerAgentCommand(program: Command): void {
  program
    .command('agent')
    .description(
      'run the host agent: register machines, list them, heartbeat, run the instances the server assigns',
    )
    .option('--url <url>', 'openrig server base URL (or env OPENRIG_URL), as for every other command')
    .option('--server <url>', 'the same as --url (older name)')
    .option('--api-key-file <file>', "file holding the host's API key, mode 0600 (or env OPENRIG_API_KEY)")
    // Accepted only to refuse it with the reason (a key in argv is readable by every process).
    .option('--api-key <key>', 'refused: use OPENRIG_API_KEY or --api-key-file')
    .option('--gpus <spec>', 'simulate GPUs, "MODEL xN" (default: read nvidia-smi)')
    .option('--machines <n>', 'machines run by this agent', '1')
    .option('--price-gpu <dph>', 'list each machine as an on-demand offer at this $/hour per GPU')
    .option('--price-disk <dph>', 'disk price, $ per GB-month')
    .option('--runtime <name>', 'docker or process (default: docker when an engine answers on its socket)')
    .option('--state-dir <dir>', 'where the agent keeps its id and its instances', './agent-state')
    .option(
      '--no-benchmarks',
      'run no benchmarks (docs/benchmarks.md): the machines cannot be verified by them',
    )
    .option(
      '--ssh-bind <addr>',
      "address the instances' SSH servers and published ports listen on (default: a loopback --public-host, else 0.0.0.0)",
    )
    .option(
      '--public-host <host>',
      "address renters reach this machine's instances at (default: the address the agent reaches the server from)",
    )
    .option(
      '--location <where>',
      'where the machines are, as renters search by country: "City, CC" or a country code, e.g. "Oslo, NO" or NO',
    )
    .addHelpText(
      'after',
      '\nExample:\n  OPENRIG_API_KEY=$HOST_KEY openrig agent --url http://127.0.0.1:8080 --gpus "RTX 4090x2" --price-gpu 0.4',
    )
    .action(async (o: AgentOpts) => {
      // Loaded on demand so that other commands start without the agent's modules.
      const [
        { default: pino },
        { Agent, loadAgentUid },
        { detectGpus, describeMachines, gpuShares, parseGpusFlag },
        { ProcessRuntime, privateRootFlags },
        { DockerRuntime },
        { DockerEngine },
        { AgentFatalError },
        { defaultPublicHost, sshBindFor },
        { InstanceJournal },
        { parseLocation },
      ] = await Promise.all([
        import('pino'),
        import('../agent/daemon.js'),
        import('../agent/hardware.js'),
        import('../agent/runtime-process.js'),
        import('../agent/runtime-docker.js'),
        import('../agent/docker-engine.js'),
        import('../agent/agent-client.js'),
        import('../agent/public-host.js'),
        import('../agent/instance-journal.js'),
        import('../agent/location.js'),
      ]);
      const server: string | undefined = o.url ?? o.server ?? process.env.OPENRIG_URL;
      if (!server || !/^https?:\/\/[^/]+/.test(server))
        throw usage('--url must be the server URL, e.g. http://127.0.0.1:8080');
      const apiKey = readAgentKey(o);
      const publicHost: string | undefined = o.publicHost;
      if (publicHost !== undefined && !/^[A-Za-z0-9.:-]{1,253}$/.test(publicHost))
        throw usage('--public-host must be a host name or an IP address');
      const sshBind = o.sshBind ?? sshBindFor(publicHost);
      let location: string | undefined;
      if (o.location !== undefined) {
        const l = parseLocation(o.location);
        if ('error' in l) throw usage(l.error);
        location = l.location;
      }
      const n = Number(o.machines);
      if (!Number.isInteger(n) || n < 1 || n > 256)
        throw usage('--machines must be an integer from 1 to 256');
      if (o.runtime !== undefined && o.runtime !== 'process' && o.runtime !== 'docker')
        throw usage('--runtime must be docker or process');
      const heartbeatRaw = process.env.OPENRIG_HEARTBEAT_S;
      const heartbeatS = heartbeatRaw ? Number(heartbeatRaw) : undefined;
      if (heartbeatS !== undefined && !(heartbeatS >= 0.1))
        throw usage('OPENRIG_HEARTBEAT_S must be a number >= 0.1');
      const usageRaw = process.env.OPENRIG_USAGE_INTERVAL_S;
      const usageIntervalS = usageRaw ? Number(usageRaw) : undefined;
      if (usageIntervalS !== undefined && !(usageIntervalS >= 1))
        throw usage('OPENRIG_USAGE_INTERVAL_S must be a number of seconds >= 1');
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
      const priceGpu = money('--price-gpu', o.priceGpu);
      const priceDisk = money('--price-disk', o.priceDisk);
      const stateDir = path.resolve(o.stateDir);
      let level: string;
      try {
        level = logLevel(process.env);
      } catch (err) {
        throw usage((err as Error).message);
      }
      const log = pino({ level, base: { role: 'agent' } });
      // The event-loop delay, logged once a minute (event_loop_delay_ms): every renter's SSH, copies
      // and logs share this loop with the heartbeat.
      // It also goes to the server with each sync, which keeps it as a metric.
      const loopDelay = new (await import('../agent/loop-delay.js')).LoopDelayWatch(log).start();
      let agent: Agent | null = null;
      let runtime: Runtime;
      const socket = /^unix:\/\//.test(process.env.DOCKER_HOST ?? '')
        ? process.env.DOCKER_HOST!.slice('unix://'.length)
        : '/var/run/docker.sock';
      const engine = o.runtime === 'process' ? null : new DockerEngine(socket);
      const engineUp = engine !== null && (await engine.ping());
      if (o.runtime === 'docker' && !engineUp)
        throw usage(
          `--runtime docker: no Docker engine answers on ${socket} (start dockerd, or run with --runtime process)`,
        );
      // One journal gets the runtime's and the agent's lines about each instance (daemon_logs).
      const journal = new InstanceJournal();
      const agentLog = journal.wrap({
        info: (m) => log.info(m),
        warn: (m) => log.warn(m),
        error: (m) => log.error(m),
      });
      if (engine && engineUp) {
        const docker = new DockerRuntime({
          stateDir,
          agentUid: loadAgentUid(stateDir),
          sshBind,
          engine,
          log: agentLog,
          onProgress: (id, msg) => agent?.setProgress(id, msg),
          keyCheck: { server, apiKey },
        });
        process.stderr.write(`openrig agent: docker runtime on ${socket}; ${await docker.init()}\n`);
        runtime = docker;
      } else {
        await engine?.close();
        runtime = new ProcessRuntime({
          stateDir,
          sshBind,
          onExit: () => agent?.poke(),
          keyCheck: { server, apiKey },
        });
      }
      if (runtime.name === 'process')
        process.stderr.write(
          "openrig agent: the process runtime gives no isolation: instances run as plain processes of this user on this host and can read each other's files; use it for demos and a single trusted renter only (--runtime docker isolates them)\n" +
            (privateRootFlags()
              ? "openrig agent: each instance sees its own files at /root (a mount namespace of its own), so writing to /root never touches this host's /root\n"
              : "openrig agent: this host allows no mount namespace (unshare): an instance that writes to /root writes to this host's /root\n"),
        );
      if (runtime.name === 'process')
        process.stderr.write(
          `openrig agent: volumes are plain directories under ${stateDir}/volumes: their size is NOT enforced (the docker runtime run as root makes size-limited ext4 volumes)\n`,
        );
      agent = new Agent({
        server,
        apiKey,
        publicHost: publicHost ?? (() => defaultPublicHost(server)),
        location,
        sshBind,
        stateDir,
        machines: describeMachines(gpu, n, stateDir),
        devices: share.devices,
        priceGpu,
        priceDisk,
        runtime,
        heartbeatS,
        usageIntervalS,
        version: '0.1.0',
        log: agentLog,
        journal,
        loopDelay: () => loopDelay.forSync(),
        ...(o.benchmarks === false ? {} : { benchmarks: { realGpus: gpu.driver !== 'simulated' } }),
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
        a.machineIds.length > 0
          ? `openrig agent ${a.uid}: machines ${a.machineIds.join(', ')} registered with ${server}; renters reach them at ${a.publicHost}\n` +
              visibilityLines(a.machineIds, a.verification, a.verificationRule)
          : `openrig agent ${a.uid}: no machine to serve: machines ${[...a.deletedMachines].join(', ')} were deleted by their host\n`,
      );
    });
}
