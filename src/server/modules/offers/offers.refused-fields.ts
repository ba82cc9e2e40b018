// Search fields the established CLI documents that openrig refuses (docs/compatibility.md,
// `search offers`). Each is a fact about a machine that openrig does not record, so no answer
// to a filter on it would be true: a filter or an order on one is a 400 naming the field and
// saying what openrig lacks, never an empty or a made-up result. Since the agent's benchmarks
// (docs/benchmarks.md) every field the official CLI sends is recorded; the list stays for the
// next such field.

/** Field → what openrig does not know (completes "openrig does not record …"). */
export const REFUSED_FIELDS: Readonly<Record<string, string>> = {};

/**
 * The CLI's short names of fields, which it translates before sending (`flops_usd` is sent as
 * flops_per_dphtotal): another client sending the short name is told the field's name.
 */
const ALIASES: Readonly<Record<string, string>> = {
  flops_usd: 'flops_per_dphtotal',
  dlperf_usd: 'dlperf_per_dphtotal',
  dph: 'dph_total',
  cuda_vers: 'cuda_max_good',
  display_active: 'gpu_display_active',
};

/** The 400 message for a field that is not an offer field: refused with its reason, or unknown. */
export function unknownFieldMessage(kind: 'search' | 'order', field: string, shown: string): string {
  const Kind = kind === 'search' ? 'Search' : 'Order';
  if (Object.hasOwn(REFUSED_FIELDS, field))
    return `${Kind} field ${shown} is not supported by openrig: it does not record ${REFUSED_FIELDS[field]}`;
  if (Object.hasOwn(ALIASES, field)) return `Unknown ${kind} field ${shown}: it is named ${ALIASES[field]}`;
  return `Unknown ${kind} field ${shown}`;
}
