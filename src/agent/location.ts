// `openrig agent --location`: where the host's machines are, as renters search for it. The
// stored form is the machines' geolocation, "City, CC" or a bare "CC" (an ISO 3166-1 alpha-2
// country code, upper case): a search by country (`geolocation=NO`, as openrig's CLI and the
// official client send it) matches the code after the last ", " (offers.fields.ts), so both forms
// are found by their country.

/** The longest location the server takes (its register schema). */
export const MAX_LOCATION = 100;

/** The location in its stored form, or an error that says what is expected. */
export function parseLocation(raw: string): { location: string } | { error: string } {
  const bad = {
    error: `--location must be "City, CC" or a two-letter country code CC (ISO 3166-1), e.g. "Oslo, NO" or NO (got ${JSON.stringify(raw)})`,
  };
  const s = raw.trim();
  // eslint-disable-next-line no-control-regex
  if (s.length === 0 || s.length > MAX_LOCATION || /[\u0000-\u001f\u007f]/.test(s)) return bad;
  if (/^[A-Za-z]{2}$/.test(s)) return { location: s.toUpperCase() };
  const m = /^(.*\S)\s*,\s*([A-Za-z]{2})$/.exec(s);
  if (!m) return bad;
  return { location: `${m[1]}, ${m[2]!.toUpperCase()}` };
}
