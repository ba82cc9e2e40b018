// What an account environment variable may be: its name, its value, how many (docs/env-vars.md).
// Shared by the server (env-vars module) and the CLI, which refuses a bad name before it sends.

export const ENV_VAR_LIMITS = {
  /** Characters of a name. */
  name: 128,
  /** Characters of a value: an instance's own env takes values as long. */
  value: 16384,
  /** Variables per account. */
  perAccount: 100,
} as const;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names the platform sets in every instance itself (the agent's launch spec and runtimes): the
 * instance's own id, server and key, the GPUs it was given, its address and published ports.
 * The platform's value would win, so an account variable of such a name is refused.
 */
const PLATFORM_NAMES = new Set([
  'CONTAINER_API_KEY',
  'CONTAINER_ID',
  'PUBLIC_IPADDR',
  'CUDA_VISIBLE_DEVICES',
  'NVIDIA_VISIBLE_DEVICES',
]);
const PLATFORM_PREFIXES = ['OPENRIG_', 'VAST_TCP_PORT_', 'VAST_UDP_PORT_'];

/** True when the platform sets a variable of this name in every instance (case-sensitive). */
export function isPlatformName(name: string): boolean {
  return PLATFORM_NAMES.has(name) || PLATFORM_PREFIXES.some((p) => name.startsWith(p));
}

/**
 * Why `name` cannot name an account variable, or null when it can; `field` is what the caller
 * calls it (the API's `key`, the CLI's NAME). A malformed name is not quoted: a value given in
 * its place by mistake is never echoed.
 */
export function nameProblem(name: string, field = 'key'): string | null {
  if (name === '') return `${field} must name the variable`;
  if (name.length > ENV_VAR_LIMITS.name) return `${field} must be at most ${ENV_VAR_LIMITS.name} characters`;
  if (!NAME.test(name))
    return `${field} must be an environment variable name: a letter or _, then letters, digits and _`;
  if (isPlatformName(name))
    return `${name} is set by openrig in every instance and cannot be an account variable (reserved: ${[...PLATFORM_NAMES].join(', ')}, and names starting with ${PLATFORM_PREFIXES.join(', ')})`;
  return null;
}

/** Why `value` cannot be a value, or null when it can. Never quotes the value. */
export function valueProblem(value: string, field = 'value'): string | null {
  if (value.length > ENV_VAR_LIMITS.value)
    return `${field} must be at most ${ENV_VAR_LIMITS.value} characters`;
  return null;
}
