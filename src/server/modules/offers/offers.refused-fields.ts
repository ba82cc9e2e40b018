// Search fields the established CLI documents that openrig refuses (docs/compatibility.md,
// `search offers`). Each is a fact about a machine that openrig does not record, so no answer
// to a filter on it would be true: a filter or an order on one is a 400 naming the field and
// saying what openrig lacks, never an empty or a made-up result.

/** Field → what openrig does not know (completes "openrig does not record …"). */
export const REFUSED_FIELDS: Readonly<Record<string, string>> = {
  bw_nvlink: "the machines' NVLink bandwidth",
  compute_cap: "the GPUs' CUDA compute capability",
  cpu_arch: "the machines' CPU architecture",
  flops_usd: "the GPUs' TFLOPS (so not TFLOPS per dollar either)",
  gpu_arch: "the GPUs' architecture or vendor",
  gpu_display_active: 'whether a GPU has a display attached',
  gpu_max_power: "the GPUs' power limit",
  gpu_max_temp: "the GPUs' temperature limit",
  gpu_mem_bw: "the GPUs' memory bandwidth",
  has_avx: 'whether the CPU supports AVX',
  pci_gen: "the machines' PCIe generation",
  static_ip: "whether a machine's public address is static",
  total_flops: "the GPUs' TFLOPS",
  ubuntu_version: "the machines' operating system version",
};

/** The 400 message for a field that is not an offer field: refused with its reason, or unknown. */
export function unknownFieldMessage(kind: 'search' | 'order', field: string, shown: string): string {
  const Kind = kind === 'search' ? 'Search' : 'Order';
  if (Object.hasOwn(REFUSED_FIELDS, field))
    return `${Kind} field ${shown} is not supported by openrig: it does not record ${REFUSED_FIELDS[field]}`;
  return `Unknown ${kind} field ${shown}`;
}
