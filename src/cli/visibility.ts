// Whether renters see a host's machines, as the agent, `list machine` and `show machines` say it.

/**
 * Whether renters see the machines: a verified machine is in every search; an unverified one only
 * in searches that ask for unverified offers (openrig's CLI and the official client search
 * verified machines unless told otherwise), with the operator's rule for what makes it visible.
 * Nothing when the server does not say (an older server).
 */
export function visibilityLines(
  ids: number[],
  verification: Map<number, 'verified' | 'unverified' | 'deverified'>,
  rule: string | undefined,
): string {
  const verified = ids.filter((id) => verification.get(id) === 'verified');
  const unverified = ids.filter((id) => verification.get(id) === 'unverified');
  const deverified = ids.filter((id) => verification.get(id) === 'deverified');
  const list = (xs: number[]) => `${xs.length === 1 ? 'machine' : 'machines'} ${xs.join(', ')}`;
  let out = '';
  if (verified.length > 0)
    out += `${list(verified)}: verified; renters see ${verified.length === 1 ? 'it' : 'them'} in every search\n`;
  if (unverified.length > 0)
    out +=
      `${list(unverified)}: unverified, so hidden from renters' default searches (openrig search offers ` +
      `and the official client list verified machines unless asked for verified=any). ` +
      `To be visible: ${rule ?? 'ask the operator of this installation to verify them'}.\n`;
  // Deverified: its hardware, driver or benchmarks changed, or an operator withdrew it (the reason
  // is in the host's machine page and e-mail).
  if (deverified.length > 0)
    out +=
      `${list(deverified)}: deverified (hardware or driver changed, benchmarks out of tolerance, ` +
      `failed starts, or an operator; the e-mail and GET /api/v0/machines/ID/verification say which), so ` +
      `hidden from renters' default searches. To be visible again: ${rule ?? 'ask the operator of this installation to verify them'}.\n`;
  return out;
}
