// Instance commands: show instances | show instance ID | stop|start|destroy instance ID… |
// label instance | update instance ID | ssh-url ID | ssh ID | wait ID.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { Instance, UpdateInstanceBody } from '../../contract/api-types.js';
import { ApiError } from '../../client/client.js';
import { textOf } from '../../contract/text.js';
import { readConfig } from '../config-file.js';
import { act, CliFailure, common, intArg, numArg, UsageError, type Ctx, type Opts } from './context.js';
import { instanceDetail, instancesTable } from './views.js';
import { onstartOf, parseEnv } from './instance-options.js';
import {
  DEFAULT_INTERVAL_S,
  describeOutcome,
  scpUrl,
  sshCommand,
  sshUrl,
  stateLabel,
  waitForInstance,
} from './wait.js';
import { fmtDuration, spinnerLine } from '../output.js';
import {
  hostKeyAlias,
  identityCandidates,
  isDefaultKey,
  knownHostsFile,
  matchIdentity,
  tildePath,
  type IdentityCandidate,
} from './ssh-identity.js';

export function registerInstanceCommands(
  show: Command,
  program: Command,
  verbs: Record<'stop' | 'start' | 'destroy' | 'label' | 'reboot' | 'recycle' | 'update', Command>,
): void {
  common(
    show.command('instances').description('list your instances'),
    "openrig show instances\nopenrig show instances --raw | jq '.instances[].id'",
  ).action(
    act(async (ctx) => {
      const r = await ctx.client.listInstances();
      if (ctx.raw) return ctx.printRaw();
      const rows = Array.isArray(r.instances) ? r.instances : [];
      if (rows.length === 0)
        return ctx.out(
          'No instances. Rent one: openrig search offers, then openrig create instance OFFER_ID --image IMG --disk GB\n',
        );
      ctx.out(instancesTable(rows, ctx.now(), ctx.width));
    }),
  );

  common(
    show.command('instance').argument('<id>', 'instance ID').description('show one instance'),
    'openrig show instance 12',
  ).action(
    act(async (ctx, [id]) => {
      const n = intArg(id, 'instance ID');
      if (ctx.raw) {
        // `{"instances": null}` is the server's answer for "not yours or no such instance": it is
        // printed as it came, and the failure is said on stderr like without --raw.
        const inst = await ctx.client.getInstance(n);
        ctx.printRaw();
        if (!inst) throw new CliFailure(notFound(n));
        return;
      }
      const inst = await getOwnInstance(ctx, n);
      const running = inst.actual_status === 'running' ? 'running' : 'other';
      ctx.out(instanceDetail(inst, ctx.now(), await identityHint(ctx, n, { kind: running }), ctx.url));
    }),
  );

  const each = (
    verb: 'stop' | 'start' | 'destroy',
    doc: string,
    run: (ctx: Ctx, id: number) => Promise<unknown>,
    done: string,
  ) => {
    const cmd = common(
      verbs[verb].command('instance').argument('<ids...>', 'instance IDs').description(doc),
      `openrig ${verb} instance 12\nopenrig ${verb} instance 12 13 14` +
        (verb === 'destroy' ? '' : `\nopenrig ${verb} instance 12 --wait`),
    );
    if (verb !== 'destroy')
      waitOptions(
        cmd.option('--wait', `wait until it has ${verb === 'stop' ? 'stopped' : 'started and runs'}`),
      );
    cmd.action(
      act(async (ctx, [ids], opts) => {
        const list = (ids as string[]).map((x) => intArg(x, 'instance ID'));
        if (opts.wait) checkWaitOptions(opts);
        let failed = 0;
        for (const id of list) {
          try {
            const already = verb === 'destroy' ? null : await alreadyThere(ctx, id, verb);
            if (already && !ctx.raw) ctx.out(`${already}\n`);
            else {
              const r = (await run(ctx, id)) as { msg?: unknown } | undefined;
              if (ctx.raw) ctx.printRaw();
              // A repeated destroy is a success the server words as such.
              else if (verb === 'destroy' && /already destroyed/.test(textOf(r?.msg)))
                ctx.out(`instance ${id} is already destroyed\n`);
              else ctx.out(`instance ${id}: ${done}\n`);
            }
            if (opts.wait && verb !== 'destroy')
              await waitAndReport(ctx, id, opts, verb === 'stop' ? 'stopped' : 'running');
          } catch (err) {
            if (list.length === 1) throw err;
            // Several IDs: report each failure and go on; the exit code says some failed.
            failed++;
            ctx.err(`openrig: instance ${id}: ${(err as Error).message}\n`);
          }
        }
        if (failed > 0) process.exitCode = 1;
      }),
    );
  };
  each(
    'stop',
    'stop instances (compute billing halts; disk charges continue)',
    (ctx, id) => ctx.client.setInstanceState(id, 'stopped'),
    'stopping',
  );
  each(
    'start',
    'start stopped instances',
    (ctx, id) => ctx.client.setInstanceState(id, 'running'),
    'starting',
  );
  each(
    'destroy',
    'destroy instances: deletes their data and stops all billing',
    (ctx, id) => ctx.client.destroyInstance(id),
    'destroyed',
  );

  for (const verb of ['reboot', 'recycle'] as const) {
    const past = verb === 'reboot' ? 'rebooted' : 'recycled';
    waitOptions(
      common(
        verbs[verb]
          .command('instance')
          .argument('<id>', 'instance ID')
          .option('--wait', `wait until its host has ${past} it and it runs again`)
          .description(
            verb === 'reboot'
              ? 'restart the container of a running instance, keeping its disk'
              : 'pull the image again and recreate the container (the disk starts afresh; contract kept)',
          ),
        `openrig ${verb} instance 12\nopenrig ${verb} instance 12 --wait`,
      ),
    ).action(
      act(async (ctx, [id], opts) => {
        const n = intArg(id, 'instance ID');
        if (opts.wait) checkWaitOptions(opts);
        const r = await (verb === 'reboot' ? ctx.client.rebootInstance(n) : ctx.client.recycleInstance(n));
        if (ctx.raw) ctx.printRaw();
        // One of the same kind was already under way: the server says so (and makes no new request).
        else
          ctx.out(
            !r.result_url && /already/.test(textOf(r.msg))
              ? `instance ${n} is already being ${past}\n`
              : `instance ${n}: ${verb} requested\n`,
          );
        if (opts.wait)
          await waitAndReport(ctx, n, opts, 'running', `openrig wait ${n}`, {
            kind: verb,
            resultUrl: r.result_url,
          });
      }),
    );
  }

  waitOptions(
    common(
      verbs.update
        .command('instance')
        .argument('<id>', 'instance ID')
        .option('--image <image>', 'the new container image')
        .option(
          '--env <spec...>',
          "the new environment and ports, docker style: '-e KEY=VALUE -p 8080:8080' (replaces the whole env)",
        )
        .option('--onstart <file>', 'the new script run once when the instance starts')
        .option('--onstart-cmd <cmd>', 'the new command run once when the instance starts')
        .option('--args <args...>', 'new arguments for the image entrypoint (they select runtype args)')
        .option('--runtype <type>', 'a new launch mode: ssh, jupyter_proxy ssh_proxy, args …')
        .option(
          '--template <hash>',
          "a template's hash_id: its image, env, onstart and runtype, under the options given",
        )
        .option('--wait', 'wait until the new container runs')
        .description(
          "recreate an instance's container from a new configuration: same machine, GPUs and price; its disk starts afresh",
        ),
      "openrig update instance 12 --image pytorch/pytorch:2.3 --wait\nopenrig update instance 12 --env '-e HF_TOKEN=abc -p 8888:8888' --onstart-cmd 'python serve.py'\nopenrig update instance 12 --template 3f2a9c0d8e7b6a5f4e3d2c1b0a998877",
    ),
  ).action(
    act(async (ctx, [id], opts) => {
      const n = intArg(id, 'instance ID');
      const body = updateBody(opts);
      if (opts.wait) checkWaitOptions(opts); // bad wait options change nothing
      const r = await ctx.client.updateInstance(n, body);
      const stopped = r.updated_instance?.intended_status === 'stopped';
      if (ctx.raw) ctx.printRaw();
      else
        ctx.out(
          stopped
            ? `Instance ${n} updated; it stays stopped, and its next start runs the new configuration (its disk starts afresh).\n`
            : `Instance ${n} updated; its host recreates the container from the new configuration (its disk starts afresh).\n`,
        );
      if (!stopped) await waitOrHint(ctx, n, opts);
    }),
  );

  common(
    program
      .command('logs')
      .argument('<id>', 'instance ID')
      .option('--tail <n>', 'only the last N lines')
      .option('--follow', 'keep printing new output until interrupted')
      .option('--daemon-logs', "the host agent's own log of the instance (pulls, starts, failures) instead")
      .description("print an instance's output (onstart's included), fetched from its host"),
    'openrig logs 12 --tail 100\nopenrig logs 12 --follow\nopenrig logs 12 --daemon-logs',
  ).action(
    act(async (ctx, [id], opts) => {
      const n = intArg(id, 'instance ID');
      const tail = opts.tail === undefined ? undefined : intArg(String(opts.tail), '--tail');
      const fetchLogs = async (t?: number) =>
        fetchResult(
          (await ctx.client.requestLogs(n, { tail: t, daemon: opts.daemonLogs === true })).result_url,
        );
      const first = await fetchLogs(tail);
      ctx.out(first);
      if (!opts.follow) return;
      // Following: every 2 s the whole log again, printing what follows the part seen before.
      let seen = tail === undefined ? first : await fetchLogs();
      for (;;) {
        await new Promise((r) => setTimeout(r, 2000));
        const text = await fetchLogs();
        ctx.out(text.startsWith(seen) ? text.slice(seen.length) : text);
        seen = text;
      }
    }),
  );

  common(
    program
      .command('execute')
      .argument('<id>', 'instance ID')
      .argument('<command>', "an allow-listed command: ls, du or rm with plain paths, e.g. 'ls -l /root'")
      .description('run a short command in the container and print its output'),
    "openrig execute 12 'ls -l /root'\nopenrig execute 12 'du -sh /root'",
  ).action(
    act(async (ctx, [id, command]) => {
      const r = await ctx.client.executeCommand(intArg(id, 'instance ID'), String(command));
      const output = await fetchResult(r.result_url);
      ctx.out(output);
      // As `openrig ssh` does: the remote command's status is this command's, so scripts can test it.
      const code = commandStatus(output);
      if (code !== 0) process.exitCode = code;
    }),
  );

  common(
    verbs.label
      .command('instance')
      .argument('<id>', 'instance ID')
      .argument('<label>', 'new label')
      .description('set an instance label'),
    'openrig label instance 12 "training run 3"',
  ).action(
    act(async (ctx, [id, label]) => {
      await ctx.client.labelInstance(intArg(id, 'instance ID'), String(label));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`instance ${String(id)}: label set\n`);
    }),
  );

  common(
    program
      .command('ssh-url')
      .argument('<id>', 'instance ID')
      .description('print the ssh:// URL of a running instance'),
    'openrig ssh-url 12',
  ).action(
    act(async (ctx, [id]) => {
      const inst = await runningInstance(ctx, intArg(id, 'instance ID'));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(sshUrl(inst) + '\n');
    }),
  );

  common(
    program
      .command('gateway-link')
      .argument('<id>', 'instance ID')
      .option('--port <port>', 'the port (default: the first the gateway serves)')
      .description("print a signed, expiring link to one of an instance's gateway ports"),
    'openrig gateway-link 12 --port 8888',
  ).action(
    act(async (ctx, [id], opts) => {
      const port = opts.port === undefined ? undefined : intArg(String(opts.port), '--port');
      const r = await ctx.client.gatewayLink(intArg(id, 'instance ID'), port);
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`${r.url}\n`);
    }),
  );

  common(
    program
      .command('scp-url')
      .argument('<id>', 'instance ID')
      .description('print the scp:// URL of a running instance'),
    'openrig scp-url 12\nscp ./data.tar "$(openrig scp-url 12)/root/"',
  ).action(
    act(async (ctx, [id]) => {
      const inst = await runningInstance(ctx, intArg(id, 'instance ID'));
      if (ctx.raw) return ctx.printRaw();
      ctx.out(scpUrl(inst) + '\n');
    }),
  );

  common(
    program
      .command('ssh')
      .argument('<id>', 'instance ID')
      .argument('[ssh-args...]', 'more arguments for ssh (after --), e.g. a command to run')
      .option('-i, --identity <file>', 'private key file (default: the one whose public key you registered)')
      .option('-o, --ssh-option <opt...>', "more ssh -o options; they take precedence over openrig's")
      .description(
        "log into a running instance with the system's ssh: picks your registered key, accepts the host key on first use (in openrig's own known_hosts), refuses a changed one, and exits with the remote command's code",
      ),
    'openrig ssh 12\nopenrig ssh 12 -- nvidia-smi\nopenrig ssh 12 -i ~/.ssh/work_key -- uptime',
  ).action(
    act(async (ctx, [id, more], opts) => {
      const n = intArg(id, 'instance ID');
      const extra = (more as string[] | undefined) ?? [];
      const inst = await runningInstance(ctx, n);
      const identity = opts.identity ? String(opts.identity) : (await findIdentity(ctx, n))?.file;
      if (!identity)
        ctx.err(
          `openrig: warning: none of your private keys (~/.ssh/*, ./data/demo/id_ed25519, OPENRIG_SSH_KEY) matches a key instance ${n} accepts; ssh will try its defaults (pass -i KEY, or register yours with openrig ssh-key add before creating an instance)\n`,
        );
      const known = knownHostsFile(ctx.env);
      mkdirSync(path.dirname(known), { recursive: true, mode: 0o700 });
      const args: string[] = [];
      // ssh keeps the first value it is given for an option: the user's own -o come first.
      for (const o of (opts.sshOption as string[] | undefined) ?? []) args.push('-o', o);
      args.push(
        '-o',
        `HostKeyAlias=${hostKeyAlias(ctx.url, n)}`,
        '-o',
        `UserKnownHostsFile=${known}`,
        '-o',
        'StrictHostKeyChecking=accept-new',
        '-p',
        String(inst.ssh_port),
      );
      if (identity) args.push('-i', identity);
      args.push(`root@${inst.ssh_host}`, ...extra);
      let changed = false;
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn('ssh', args, { stdio: ['inherit', 'inherit', 'pipe'] });
        // ssh's own messages pass through; a changed host key is recognised to explain it.
        child.stderr.on('data', (d: Buffer) => {
          if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed/.test(d.toString()))
            changed = true;
          process.stderr.write(d);
        });
        child.on('error', (e) =>
          reject(
            new CliFailure(
              (e as NodeJS.ErrnoException).code === 'ENOENT'
                ? `ssh is not installed; connect with: ${sshCommand(inst, identity)}`
                : e.message,
            ),
          ),
        );
        child.on('close', (c, sig) => resolve(c ?? (sig ? 255 : 0)));
      });
      if (changed) {
        ctx.err(
          `openrig: refused: instance ${n}'s host key is not the one it had on first use (${tildePath(known, ctx.env)}). ` +
            `If the instance was recreated on purpose, forget the old key with: ssh-keygen -R ${hostKeyAlias(ctx.url, n)} -f ${tildePath(known, ctx.env)}\n`,
        );
      }
      if (code !== 0) process.exitCode = code;
    }),
  );

  waitOptions(
    common(
      program
        .command('wait')
        .argument('<id>', 'instance ID')
        .description('wait until an instance runs, then print its ssh command'),
      'openrig wait 12\nopenrig wait 12 --interval 5 --timeout 600',
    ),
  ).action(
    act(async (ctx, [id], opts) => {
      await waitAndReport(ctx, intArg(id, 'instance ID'), opts);
    }),
  );
}

export function waitOptions(cmd: Command): Command {
  return cmd
    .option(
      '--interval <seconds>',
      `longest pause between polls; polls start at 0.5 s and back off to this`,
      String(DEFAULT_INTERVAL_S),
    )
    .option('--timeout <seconds>', 'give up after this many seconds (0: wait forever)', '900');
}

/** The --interval and --timeout of a wait, checked (a usage error before anything is asked). */
export function checkWaitOptions(opts: Opts): { intervalS: number; timeoutS: number } {
  const intervalS = numArg(opts.interval ?? DEFAULT_INTERVAL_S, '--interval');
  const timeoutS = numArg(opts.timeout ?? 0, '--timeout');
  if (intervalS <= 0 || intervalS > 3600)
    throw new UsageError('--interval must be more than 0 and at most 3600 seconds');
  if (timeoutS < 0) throw new UsageError('--timeout must be 0 or more seconds');
  return { intervalS, timeoutS };
}

/** The key `openrig login` remembered; none when the config file is broken (the command had what it needs). */
function storedIdentity(env: NodeJS.ProcessEnv): string | undefined {
  try {
    return readConfig(env).ssh_identity;
  } catch {
    return undefined;
  }
}

/**
 * The private key whose public half instance `instanceId` accepts (without an instance: one
 * registered on the account), or null. A server without the instance's key list is asked for the
 * account's keys instead.
 */
export async function findIdentity(ctx: Ctx, instanceId?: number): Promise<IdentityCandidate | null> {
  const candidates = identityCandidates(ctx.env, process.cwd(), storedIdentity(ctx.env));
  if (candidates.length === 0) return null;
  let accepted: string[] | null = null;
  if (instanceId !== undefined) {
    try {
      accepted = await ctx.client.instanceSshKeys(instanceId);
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) throw err;
    }
  }
  accepted ??= (await ctx.client.listSshKeys()).map((k) => String(k.ssh_key ?? k.public_key ?? ''));
  return matchIdentity(candidates, accepted);
}

/** `-i` for the "Connect with" line when the registered key is not one ssh finds by itself. */
async function identityHint(ctx: Ctx, id: number, outcome: { kind: string }): Promise<string | undefined> {
  if (outcome.kind !== 'running') return undefined;
  try {
    const found = await findIdentity(ctx, id);
    return found && !isDefaultKey(found.file, ctx.env) ? tildePath(found.file, ctx.env) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A repeated stop or start says so instead of answering as if it did something: the text for
 * an instance already (going) where it was asked to go, else null.
 */
async function alreadyThere(ctx: Ctx, id: number, verb: 'stop' | 'start'): Promise<string | null> {
  const inst = await getOwnInstance(ctx, id);
  const want = verb === 'stop' ? 'stopped' : 'running';
  if (inst.intended_status !== want) return null;
  // A start of an exited instance is a restart (and one of an unknown or offline instance is the
  // server's to refuse): only provisioning, loading and running are already on their way.
  if (
    verb === 'start' &&
    !(inst.actual_status === null || inst.actual_status === 'loading' || inst.actual_status === 'running')
  )
    return null;
  if (inst.actual_status === want) return `instance ${id} is already ${want}`;
  return `instance ${id} is already ${verb === 'stop' ? 'stopping' : 'starting'} (now ${stateLabel(inst)})`;
}

async function getOwnInstance(ctx: Ctx, id: number): Promise<Instance> {
  const inst = await ctx.client.getInstance(id);
  if (!inst) throw new CliFailure(notFound(id));
  return inst;
}

const notFound = (id: number) =>
  `instance ${id} not found (it does not exist, was destroyed, or is not yours)`;

async function runningInstance(ctx: Ctx, id: number): Promise<Instance> {
  const inst = await getOwnInstance(ctx, id);
  if (inst.actual_status !== 'running' || !inst.ssh_host || !inst.ssh_port) {
    const hint =
      inst.intended_status === 'stopped' || inst.actual_status === 'stopped'
        ? ` (start it: openrig start instance ${id})`
        : inst.actual_status === null || inst.actual_status === 'loading' || inst.actual_status === 'running'
          ? ` (wait for it: openrig wait ${id})`
          : ` (it will not run; destroy it: openrig destroy instance ${id})`;
    throw new CliFailure(`instance ${id} is ${stateLabel(inst)}, not running: no SSH${hint}`);
  }
  return inst;
}

/**
 * The update-instance body from the command's options: only what is given, so the instance (or
 * the template, with --template) keeps the rest; at least one change.
 */
export function updateBody(opts: Opts): UpdateInstanceBody {
  // Built a field at a time; the check below makes it an UpdateInstanceBody (one change at least).
  const body: Partial<UpdateInstanceBody> = {};
  if (opts.image !== undefined) {
    body.image = String(opts.image);
    if (body.image.trim() === '') throw new UsageError('--image must name a container image');
  }
  if (opts.env) body.env = parseEnv(opts.env as string[]);
  const onstart = onstartOf(opts);
  if (onstart !== undefined) body.onstart = onstart;
  if (opts.args) body.args = opts.args as string[];
  if (opts.runtype !== undefined) body.runtype = String(opts.runtype);
  if (opts.template !== undefined) {
    body.template_hash_id = String(opts.template).trim();
    if (body.template_hash_id === '')
      throw new UsageError('--template must be a template hash_id (show templates lists them)');
  }
  if (Object.keys(body).length === 0)
    throw new UsageError(
      'nothing to update: give --image, --env, --onstart FILE, --onstart-cmd CMD, --args, --runtype or --template',
    );
  return body as UpdateInstanceBody;
}

/** What the wait line shows: the state and, when the host says more, its status message. */
export function waitText(
  id: number,
  state: string,
  statusMsg: unknown,
  elapsedMs: number,
  /** The most characters the line may take (a terminal's width): the message is cut with `…`. */
  maxWidth?: number,
): string {
  const text = typeof statusMsg === 'string' ? statusMsg.replace(/\s+/g, ' ').trim() : '';
  const head = `instance ${id}: ${state}`;
  const tail = ` (${fmtDuration(elapsedMs / 1000)})`;
  let msg = text === '' ? '' : `: ${text}`;
  if (maxWidth !== undefined && maxWidth > 0) {
    const room = maxWidth - head.length - tail.length;
    const chars = [...msg];
    if (chars.length > room) msg = room >= 4 ? chars.slice(0, room - 1).join('') + '…' : '';
  }
  return `${head}${msg}${tail}`;
}

/** With --wait, waits until the instance runs (waitAndReport); else says how to (not with --raw). */
export async function waitOrHint(ctx: Ctx, id: number, opts: Opts): Promise<void> {
  if (opts.wait) await waitAndReport(ctx, id, opts);
  else if (!ctx.raw) ctx.out(`Wait for it: openrig wait ${id}\n`);
}

/**
 * Polls until running (prints the ssh command), stopped (with `until: 'stopped'`), or a state
 * that never runs (exit 1). On a terminal one line is redrawn with the live elapsed time, the
 * state and the host's status message; otherwise each change is one plain line on stderr.
 * Ctrl-C leaves the instance as it is and says how to resume waiting.
 */
export async function waitAndReport(
  ctx: Ctx,
  id: number,
  opts: Opts,
  until: 'running' | 'stopped' = 'running',
  resume = until === 'running' ? `openrig wait ${id}` : `openrig stop instance ${id} --wait`,
  restart?: RestartWait,
): Promise<void> {
  const { intervalS, timeoutS } = checkWaitOptions(opts);
  const tty = ctx.tty && !ctx.raw;
  const started = Date.now();
  let state = 'waiting';
  let statusMsg: unknown = undefined;
  let lastLine = '';
  let frame = 0;
  // The spinner and the elapsed time move between polls; drawn only on a terminal.
  // One terminal row, never wrapped (a wrapped line could not be redrawn in place): the spinner
  // and a space, then the text, a column short of the edge.
  const draw = () => {
    const cols = process.stdout.columns;
    const room = cols ? cols - 3 : undefined;
    ctx.out(spinnerLine(frame++, waitText(id, state, statusMsg, Date.now() - started, room)));
  };
  const timer = tty ? setInterval(draw, 120) : null;
  const onInt = () => {
    if (timer) ctx.out('\r\u001b[2K');
    ctx.err(
      `openrig: stopped waiting; instance ${id} is still ${state === 'waiting' ? 'provisioning' : state} and was left as it is (resume with: ${resume})\n`,
    );
    process.exit(130);
  };
  process.once('SIGINT', onInt);
  try {
    const outcome = await waitForInstance(
      id,
      {
        getInstance: (i) => ctx.client.getInstance(i),
        now: () => Date.now(),
        sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
        onPoll: ({ state: st, elapsedMs, instance }) => {
          state = st;
          statusMsg = instance?.status_msg;
          if (tty) return draw();
          const line = waitText(id, st, statusMsg, 0).replace(/ \(0s\)$/, '');
          if (!ctx.raw && line !== lastLine) ctx.err(`${waitText(id, st, statusMsg, elapsedMs)}\n`);
          lastLine = line;
        },
      },
      { intervalMs: intervalS * 1000, timeoutMs: timeoutS * 1000, until },
    );
    if (timer) {
      clearInterval(timer);
      ctx.out('\r\u001b[2K');
    }
    // A reboot or recycle runs again once its host has carried it out: whether that went well is
    // its result (`error: …` when it failed and the old container was kept).
    if (restart && outcome.kind === 'running') {
      const result = restart.resultUrl ? await readResultOnce(restart.resultUrl) : '';
      if (result === null)
        throw new CliFailure(
          `instance ${id} runs, but its host never confirmed the ${restart.kind} (the request expired unanswered)`,
        );
      if (result.startsWith('error: '))
        throw new CliFailure(
          `instance ${id}: the ${restart.kind} failed: ${result.slice(7).trim()}; the instance runs as it did before`,
        );
    }
    // With --raw the last reply printed is the instance's, so no other call comes after it.
    const hint = ctx.raw ? undefined : await identityHint(ctx, id, outcome);
    const d = describeOutcome(id, outcome, hint, restart?.kind);
    if (!d.ok) throw new CliFailure(d.text);
    if (ctx.raw) return ctx.printRaw();
    ctx.out(d.text);
  } finally {
    if (timer) clearInterval(timer);
    process.removeListener('SIGINT', onInt);
  }
}

/** What a reboot or recycle wait checks at its end: the request's result URL, when it has one. */
export interface RestartWait {
  kind: 'reboot' | 'recycle';
  resultUrl?: string;
}

/** A result URL's text, or null while (or once) it has none. */
async function readResultOnce(url: string): Promise<string | null> {
  const res = await fetch(url);
  if (res.ok) return res.text();
  if (res.status === 404) return null;
  throw new CliFailure(`reading ${url}: HTTP ${res.status}`);
}

/**
 * Reads a result URL (no key) until the host has answered: 404 while waiting, about every 0.3 s
 * for up to 60 s, as the official client does.
 */
/**
 * The status of a command from the host's answer: its output ends with `(exit code N)` when the
 * command failed (both runtimes write it so), and that N is the status. A code that is not a
 * number (the command could not start, e.g. ENOENT) is 127, as a shell says for a missing command.
 */
export function commandStatus(text: string): number {
  const m = /\(exit code ([^)\n]+)\)\n?$/.exec(text);
  if (!m) return 0;
  const n = Number(m[1]);
  return Number.isInteger(n) && n > 0 && n < 256 ? n : 127;
}

async function fetchResult(url: string): Promise<string> {
  const end = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(url);
    if (res.ok) return res.text();
    if (res.status !== 404) throw new CliFailure(`reading ${url}: HTTP ${res.status}`);
    if (Date.now() > end) throw new CliFailure('the host did not answer within 60 s (is its agent running?)');
    await new Promise((r) => setTimeout(r, 300));
  }
}
