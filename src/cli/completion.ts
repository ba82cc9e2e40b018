// Shell completion: `openrig completion bash|zsh|fish` prints a small script that asks
// `openrig __complete WORD…` for candidates; main() hands it the words before commander parses
// anything. The candidates come from the command tree itself (commands, subcommands, flags), so
// they never drift from the CLI; instance IDs come from the server when the user is logged in
// (nothing, quietly, when not), for every command whose first argument is an instance ID.
import { Command, CommanderError } from 'commander';
import { OpenrigClient } from '../client/client.js';
import { resolveSettings } from './user/context.js';

const SCRIPTS: Record<string, string> = {
  bash: `# openrig completion for bash: eval "$(openrig completion bash)"
_openrig_complete() {
  local IFS=$'\\n'
  COMPREPLY=( $(openrig __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) )
}
complete -o default -F _openrig_complete openrig
`,
  zsh: `#compdef openrig
# openrig completion for zsh: eval "$(openrig completion zsh)"
_openrig() {
  local -a candidates
  candidates=("\${(@f)$(openrig __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -a candidates
}
compdef _openrig openrig
`,
  fish: `# openrig completion for fish: openrig completion fish | source
complete -c openrig -f -a '(openrig __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
};

/** A command whose first argument is an instance ID (or a list of them), as its help names it. */
function takesInstance(c: Command): boolean {
  const first = c.registeredArguments[0];
  return !!first && /^instance IDs?$/.test(first.description);
}

function visible(c: Command): boolean {
  return !c.name().startsWith('__') && c.name() !== 'help';
}

/** The option `w` names on `cmd` (`--url`, `-i`, `--url=x`), if any. */
function optionOf(cmd: Command, w: string) {
  const flag = w.replace(/=.*$/, '');
  return cmd.options.find((o) => o.long === flag || o.short === flag);
}

/** The candidates for the last word, given the words typed before it. Pure but for `ids`. */
export async function candidates(
  program: Command,
  words: string[],
  ids: () => Promise<string[]>,
): Promise<string[]> {
  const current = words.at(-1) ?? '';
  let cmd = program;
  let positionals = 0;
  let takesValue = false;
  for (const w of words.slice(0, -1)) {
    if (takesValue) {
      takesValue = false;
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === w || c.aliases().includes(w));
    if (sub && positionals === 0) cmd = sub;
    else if (w.startsWith('-')) {
      const o = optionOf(cmd, w);
      takesValue = !!o && (o.required || o.optional) && !w.includes('=') && !o.variadic;
    } else positionals++;
  }
  let out: string[];
  if (takesValue) {
    out = []; // the value of an option: nothing to offer
  } else if (current.startsWith('-')) {
    out = cmd.options.map((o) => o.long ?? o.short ?? '').filter(Boolean);
  } else if (cmd.commands.some(visible) && positionals === 0) {
    out = cmd.commands.filter(visible).map((c) => c.name());
  } else if (takesInstance(cmd) && (positionals === 0 || cmd.registeredArguments[0]!.variadic)) {
    out = await ids();
  } else {
    out = [];
  }
  return out.filter((c) => c.startsWith(current)).sort();
}

/** Instance IDs of the account the settings name; none, quietly, without a key or within 2 seconds. */
async function instanceIds(): Promise<string[]> {
  try {
    const st = resolveSettings({}, process.env);
    if (!st.apiKey) return [];
    const client = new OpenrigClient({ url: st.url, apiKey: st.apiKey, sessionKey: st.sessionKey });
    const r = await Promise.race([
      client.listInstances(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('slow')), 2000).unref()),
    ]);
    return (Array.isArray(r.instances) ? r.instances : []).map((i) => String(i.id));
  } catch {
    return [];
  }
}

/**
 * `openrig __complete WORD…`: prints the candidates for the last word, one a line. The words are
 * taken exactly as the shell passed them, not parsed as options (`--` and `-V` are words here).
 */
export async function runComplete(program: Command, words: string[]): Promise<void> {
  const list = await candidates(program, words.length ? words : [''], instanceIds);
  if (list.length) process.stdout.write(list.join('\n') + '\n');
}

export function registerCompletion(program: Command): void {
  program
    .command('completion')
    .argument('<shell>', 'bash, zsh or fish')
    .description('print a shell completion script (commands, flags, and your instance IDs)')
    .addHelpText(
      'after',
      '\nExample:\n  eval "$(openrig completion bash)"     # in ~/.bashrc\n  eval "$(openrig completion zsh)"      # in ~/.zshrc\n  openrig completion fish > ~/.config/fish/completions/openrig.fish\n',
    )
    .action((shell: string) => {
      const script = SCRIPTS[shell];
      if (!script)
        throw new CommanderError(2, 'usage', `completion: shell must be bash, zsh or fish, not "${shell}"`);
      process.stdout.write(script);
    });
}
