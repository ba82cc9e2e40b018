// The rules of an account environment variable: names, reserved names, value size.
import { describe, expect, it } from 'vitest';
import { ENV_VAR_LIMITS, isPlatformName, nameProblem, valueProblem } from './env-var-rules.js';

describe('account environment variable rules', () => {
  it.each(['A', '_', 'a_b', 'HF_TOKEN', '_X9', 'x'.repeat(ENV_VAR_LIMITS.name), 'HOME', 'PATH'])(
    'accepts the name %s',
    (name) => expect(nameProblem(name)).toBeNull(),
  );

  it.each([
    ['', 'key must name the variable'],
    ['9A', 'key must be an environment variable name'],
    ['A-B', 'key must be an environment variable name'],
    ['A.B', 'key must be an environment variable name'],
    ['A B', 'key must be an environment variable name'],
    ['A=B', 'key must be an environment variable name'],
    ['É', 'key must be an environment variable name'],
    ['x'.repeat(ENV_VAR_LIMITS.name + 1), 'key must be at most 128 characters'],
  ])('refuses the name %#, without quoting it', (name, msg) => {
    const why = nameProblem(name)!;
    expect(why).toContain(msg);
    if (name !== '') expect(why).not.toContain(name);
  });

  it('names the field as the caller calls it', () => {
    expect(nameProblem('9', 'NAME')).toBe(
      'NAME must be an environment variable name: a letter or _, then letters, digits and _',
    );
    expect(valueProblem('x'.repeat(ENV_VAR_LIMITS.value + 1), 'VALUE')).toBe(
      'VALUE must be at most 16384 characters',
    );
  });

  it('reserves what the platform sets: exact names and prefixes, case-sensitive', () => {
    for (const n of [
      'CONTAINER_API_KEY',
      'CONTAINER_ID',
      'PUBLIC_IPADDR',
      'CUDA_VISIBLE_DEVICES',
      'NVIDIA_VISIBLE_DEVICES',
      'OPENRIG_SERVER_URL',
      'OPENRIG_',
      'VAST_TCP_PORT_22',
      'VAST_UDP_PORT_1',
    ]) {
      expect(isPlatformName(n), n).toBe(true);
      expect(nameProblem(n)).toContain(`${n} is set by openrig in every instance`);
    }
    for (const n of ['container_id', 'OPENRIG', 'openrig_x', 'VAST_TCP_PORT', 'CONTAINER_IDX', 'HOME'])
      expect(isPlatformName(n), n).toBe(false);
  });

  it('values: any string up to the limit, the empty one too', () => {
    expect(valueProblem('')).toBeNull();
    expect(valueProblem('x'.repeat(ENV_VAR_LIMITS.value))).toBeNull();
    expect(valueProblem('x'.repeat(ENV_VAR_LIMITS.value + 1))).toBe('value must be at most 16384 characters');
  });
});
