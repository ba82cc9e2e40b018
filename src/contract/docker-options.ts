// Docker-style options, as clients of the marketplace write an instance's environment and ports:
// `-e NAME=VALUE`, `--env NAME=VALUE` or a bare `NAME=VALUE`, and `-p [IP:][HOST:]CONTAINER[/tcp|udp]`.
// openrig's CLI reads its --env so, and the server reads a template's env string so; both turn
// them into a create body's env object, where a port is the key `-p MAPPING`.

/** The words of `text` as a shell splits them: quotes group spaces and are removed. */
export function shellWords(text: string): string[] {
  return (text.match(/(?:[^\s"']+|"[^"]*"|'[^']*')+/g) ?? []).map((w) =>
    w.replace(/"([^"]*)"|'([^']*)'/g, '$1$2'),
  );
}

const PORT_MAPPING = /^(\d+(\.\d+){3}:)?\d+(:\d+)?(\/(tcp|udp))?$/;

/** A word NAME=VALUE: the name as it is or in the word's opening quotes, the value any word. */
const KV_WORD =
  `(?:[A-Za-z_][A-Za-z0-9_]*=|"[A-Za-z_][A-Za-z0-9_]*=[^"]*"|'[A-Za-z_][A-Za-z0-9_]*=[^']*')` +
  `(?:[^\\s"']+|"[^"]*"|'[^']*')*`;
/**
 * A JSON-schema pattern for docker-style options as dockerOptionsEnv takes them: `-e`/`--env`
 * NAME=VALUE, `-p` MAPPING, bare NAME=VALUE; empty is none.
 */
export const DOCKER_OPTIONS_PATTERN = (() => {
  const port = `${PORT_MAPPING.source.slice(1, -1)}`;
  const option = `(?:(?:-e|--env)\\s+${KV_WORD}|-p\\s+${port}|${KV_WORD})`;
  return `^\\s*(?:${option}(?:\\s+${option})*)?\\s*$`;
})();
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The env object of docker-style option words, or why they are not understood (a sentence that
 * names the word, for the caller to prefix with its field). Any other option is refused.
 */
export function dockerOptionsEnv(words: string[]): { env: Record<string, string> } | { error: string } {
  const env: Record<string, string> = {};
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    let kv = w;
    if (w === '-e' || w === '--env') {
      const next = words[++i];
      if (!next) return { error: `${w} needs KEY=VALUE` };
      kv = next;
    } else if (w === '-p') {
      const p = words[++i];
      if (!p || !PORT_MAPPING.test(p))
        return { error: `-p needs a port mapping like 8080:8080, not "${p ?? ''}"` };
      env[`-p ${p}`] = '1';
      continue;
    } else if (w.startsWith('-')) {
      return { error: `unknown flag "${w}" (use -e KEY=VALUE or -p HOST:CONTAINER)` };
    }
    const eq = kv.indexOf('=');
    if (eq <= 0) return { error: `"${kv}" is not KEY=VALUE` };
    const key = kv.slice(0, eq);
    if (!NAME.test(key)) return { error: `"${key}" is not a valid variable name` };
    env[key] = kv.slice(eq + 1);
  }
  return { env };
}
