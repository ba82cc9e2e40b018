// Instance commands: show instances | show instance ID | stop|start|destroy instance ID… |
// label instance | ssh-url ID | ssh ID | wait ID.
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import type { Instance } from '../../contract/api-types.js';
import { act, CliFailure, common, intArg, numArg, UsageError, type Ctx } from './context.js';
import { instanceDetail, instancesTable } from './views.js';
import {
  DEFAULT_INTERVAL_S,
  describeOutcome,
  sshCommand,
  sshUrl,
  stateLabel,
  waitForInstance,
} from './wait.js';
import { fmtDuration, spinnerLine } from '../output.js';

export function registerInstanceCommands(
  show: Command,
  program: Command,
  verbs: Record<'stop' | 'start' | 'destroy' | 'label', Command>,
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
      ctx.out(instancesTable(rows, ctx.now()));
    }),
  );

  common(
    show.command('instance').argument('<id>', 'instance ID').description('show one instance'),
    'openrig show instance 12',
  ).action(
    act(async (ctx, [id]) => {
      const n = intArg(id, 'instance ID');
      if (ctx.raw) {
        // `{"instances": null}` is the server's answer for "not yours or no such instance".
        const inst = await ctx.client.getInstance(n);
        ctx.printRaw();
        if (!inst) process.exitCode = 1;
        return;
      }
      ctx.out(instanceDetail(await getOwnInstance(ctx, n), ctx.now()));
    }),
  );

  const each = (
    verb: 'stop' | 'start' | 'destroy',
    doc: string,
    run: (ctx: Ctx, id: number) => Promise<unknown>,
    done: string,
  ) =>
    common(
      verbs[verb].command('instance').argument('<ids...>', 'instance IDs').description(doc),
      `openrig ${verb} instance 12\nopenrig ${verb} instance 12 13 14`,
    ).action(
      act(async (ctx, [ids]) => {
        const list = (ids as string[]).map((x) => intArg(x, 'instance ID'));
        let failed = 0;
        for (const id of list) {
          try {
            await run(ctx, id);
            if (ctx.raw) ctx.printRaw();
            else ctx.out(`instance ${id}: ${done}\n`);
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
      ctx.out(`instance ${id}: label set\n`);
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
      .command('ssh')
      .argument('<id>', 'instance ID')
      .argument('[ssh-args...]', 'more arguments for ssh (after --), e.g. a command to run')
      .option('-i, --identity <file>', 'private key file for ssh')
      .option('-o, --ssh-option <opt...>', 'ssh -o options, e.g. StrictHostKeyChecking=accept-new')
      .description("log into a running instance with the system's ssh"),
    'openrig ssh 12\nopenrig ssh 12 -- nvidia-smi\nopenrig ssh 12 -o StrictHostKeyChecking=accept-new -- uptime',
  ).action(
    act(async (ctx, [id, extra], opts) => {
      const inst = await runningInstance(ctx, intArg(id, 'instance ID'));
      const args = ['-p', String(inst.ssh_port)];
      if (opts.identity) args.push('-i', String(opts.identity));
      for (const o of (opts.sshOption as string[] | undefined) ?? []) args.push('-o', o);
      args.push(`root@${inst.ssh_host}`, ...((extra as string[] | undefined) ?? []));
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn('ssh', args, { stdio: 'inherit' });
        child.on('error', (e) =>
          reject(
            new CliFailure(
              (e as NodeJS.ErrnoException).code === 'ENOENT'
                ? `ssh is not installed; connect with: ${sshCommand(inst)}`
                : e.message,
            ),
          ),
        );
        child.on('exit', (c, sig) => resolve(c ?? (sig ? 255 : 0)));
      });
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
      `seconds between polls (recommended: ${DEFAULT_INTERVAL_S})`,
      String(DEFAULT_INTERVAL_S),
    )
    .option('--timeout <seconds>', 'give up after this many seconds (0: wait forever)', '900');
}

async function getOwnInstance(ctx: Ctx, id: number): Promise<Instance> {
  const inst = await ctx.client.getInstance(id);
  if (!inst)
    throw new CliFailure(`instance ${id} not found (it does not exist, was destroyed, or is not yours)`);
  return inst;
}

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

/** Polls until running (prints the ssh command) or a state that never runs (exit 1). */
export async function waitAndReport(ctx: Ctx, id: number, opts: Record<string, unknown>): Promise<void> {
  const intervalS = numArg(opts.interval ?? DEFAULT_INTERVAL_S, '--interval');
  const timeoutS = numArg(opts.timeout ?? 0, '--timeout');
  if (intervalS <= 0 || intervalS > 3600)
    throw new UsageError('--interval must be more than 0 and at most 3600 seconds');
  if (timeoutS < 0) throw new UsageError('--timeout must be 0 or more seconds');
  const tty = !!process.stdout.isTTY && !ctx.raw;
  let text = `instance ${id}: waiting`;
  let frame = 0;
  let lastState = '';
  // The spinner turns between polls; it is drawn only on a terminal.
  const timer = tty ? setInterval(() => ctx.out(spinnerLine(frame++, text)), 120) : null;
  // Ctrl-C ends the wait, not the instance: say so, and how to resume.
  const onInt = () => {
    if (timer) ctx.out('\r\u001b[2K');
    ctx.err(
      `openrig: stopped waiting; instance ${id} is still ${lastState || 'provisioning'} (resume with: openrig wait ${id})\n`,
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
        onPoll: ({ state, elapsedMs }) => {
          text = `instance ${id}: ${state} (${fmtDuration(elapsedMs / 1000)})`;
          if (!tty && !ctx.raw && state !== lastState) ctx.err(`${text}\n`);
          lastState = state;
        },
      },
      { intervalMs: intervalS * 1000, timeoutMs: timeoutS * 1000 },
    );
    if (timer) {
      clearInterval(timer);
      ctx.out('\r\u001b[2K');
    }
    const d = describeOutcome(id, outcome);
    if (!d.ok) throw new CliFailure(d.text);
    if (ctx.raw) return ctx.printRaw();
    ctx.out(d.text);
  } finally {
    if (timer) clearInterval(timer);
    process.removeListener('SIGINT', onInt);
  }
}
