// Table types: rate limits and other cross-cutting tables (issue 9).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface PlatformTables {}
