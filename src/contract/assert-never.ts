// Exhaustiveness check for switches over a union: the compiler refuses a case left out, and a
// value the types did not foresee (from the wire, say) fails loudly at run time.
export function assertNever(x: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(x)}`);
}
