// show env-vars [--show-values], create env-var NAME [VALUE], update env-var NAME [VALUE],
// delete env-var NAME (docs/env-vars.md). Without VALUE the value is read from standard input
// (a prompt that does not echo on a terminal), so a secret need not be on a command line or in
// the shell's history.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { nameProblem, valueProblem } from '../../contract/env-var-rules.js';
import { table } from '../output.js';
import { askHidden } from '../prompt.js';
import { act, common, UsageError, type Ctx, type OptValue } from './context.js';

export const MASK = '*****';

/** Control characters as JSON writes them (a line break as \n), so a value stays on its row. */
function escapeControls(v: string): string {
  // eslint-disable-next-line no-control-regex
  return v.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
}

/** The table of `show env-vars`: values masked unless `show`; control characters as JSON writes them. */
export function envVarsTable(vars: Record<string, string>, show: boolean, maxWidth?: number): string {
  const rows = Object.entries(vars).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return table(
    rows,
    [
      { header: 'Name', get: ([n]) => n },
      {
        header: 'Value',
        get: ([, v]) => (show ? escapeControls(v) : MASK),
        shrink: true,
      },
    ],
    maxWidth,
  );
}

function nameArg(v: OptValue): string {
  const name = String(v ?? '');
  const why = nameProblem(name, 'NAME');
  if (why) throw new UsageError(why);
  return name;
}

/**
 * VALUE as given, else standard input: on a terminal a prompt that does not echo, otherwise
 * everything read, less one final line break (what `echo` and a here-string add).
 */
export async function valueArg(
  v: OptValue,
  name: string,
  stdinIsTty = !!process.stdin.isTTY,
): Promise<string> {
  let value: string;
  if (typeof v === 'string') value = v;
  else if (stdinIsTty) value = await askHidden(`Value of ${name}: `);
  else value = readFileSync(0, 'utf8').replace(/\r?\n$/, '');
  const why = valueProblem(value, 'VALUE');
  if (why) throw new UsageError(why);
  return value;
}

function done(ctx: Ctx, msg: unknown, fallback: string): void {
  if (ctx.raw) return ctx.printRaw();
  ctx.out(`${typeof msg === 'string' && msg !== '' ? msg : fallback}\n`);
}

export function registerEnvVarCommands(show: Command, create: Command, update: Command, del: Command): void {
  common(
    show
      .command('env-vars')
      .option('-s, --show-values', 'print the values (hidden otherwise, with --raw too)')
      .description("list your account's environment variables; every instance you create gets them"),
    'openrig show env-vars --show-values',
  ).action(
    act(async (ctx, _a, opts) => {
      const r = await ctx.client.envVars();
      const vars = r.secrets && typeof r.secrets === 'object' ? r.secrets : {};
      const showValues = !!opts.showValues;
      if (ctx.raw) {
        if (showValues) return ctx.printRaw();
        const masked = Object.fromEntries(Object.keys(vars).map((k) => [k, MASK]));
        return ctx.out(`${JSON.stringify({ ...r, secrets: masked })}\n`);
      }
      if (Object.keys(vars).length === 0) return ctx.out('No environment variables\n');
      ctx.out(envVarsTable(vars, showValues, ctx.width));
      if (!showValues && ctx.tty) ctx.out('(values hidden: --show-values prints them)\n');
    }),
  );
  common(
    create
      .command('env-var')
      .argument('<name>', 'the variable name: a letter or _, then letters, digits and _')
      .argument('[value]', 'its value; omitted: read from standard input (kept out of shell history)')
      .description('add an environment variable that every instance you create from now on gets'),
    'openrig create env-var HF_TOKEN           # asks for the value\nprintf %s "$TOKEN" | openrig create env-var HF_TOKEN\nopenrig create env-var MODEL_DIR /workspace/models',
  ).action(
    act(async (ctx, [n, v]) => {
      const name = nameArg(n);
      const r = await ctx.client.createEnvVar(name, await valueArg(v, name));
      done(ctx, r.msg, `Environment variable ${name} created`);
    }),
  );
  common(
    update
      .command('env-var')
      .argument('<name>', 'the name of one of your variables')
      .argument('[value]', 'the new value; omitted: read from standard input')
      .description('change the value of an environment variable (instances created from now on get it)'),
    'openrig update env-var HF_TOKEN < token.txt',
  ).action(
    act(async (ctx, [n, v]) => {
      const name = nameArg(n);
      const r = await ctx.client.updateEnvVar(name, await valueArg(v, name));
      done(ctx, r.msg, `Environment variable ${name} updated`);
    }),
  );
  common(
    del
      .command('env-var')
      .argument('<name>', 'the name of one of your variables')
      .description('delete an environment variable (running instances keep the copy they started with)'),
    'openrig delete env-var HF_TOKEN',
  ).action(
    act(async (ctx, [n]) => {
      const name = nameArg(n);
      const r = await ctx.client.deleteEnvVar(name);
      done(ctx, r.msg, `Environment variable ${name} deleted`);
    }),
  );
}
