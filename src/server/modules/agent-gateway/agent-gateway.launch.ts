// How an instance's main process is launched, as the agent protocol carries it (DesiredInstance
// `args` and `entrypoint`). Pure.
import type { DesiredInstance } from '../../../contract/agent-protocol.js';

/**
 * An instance created with runtype `args` runs its image as is: its arguments go to the image's
 * entrypoint, or to the program its `onstart` names (the official client sends `--entrypoint`,
 * or `--onstart-cmd` when given, as `onstart` in this mode). Every other runtype leaves both
 * fields out, so the agent runs `onstart` in the background of its own main process.
 */
export function launchOf(
  runtype: string,
  argsJson: string | null,
  onstart: string,
): Pick<DesiredInstance, 'args' | 'entrypoint'> {
  if (!runtype.split(/\s+/).includes('args')) return {};
  const args = argsJson === null ? [] : (JSON.parse(argsJson) as string[]);
  const entrypoint = onstart.trim();
  return { args, entrypoint: entrypoint === '' ? null : entrypoint };
}
