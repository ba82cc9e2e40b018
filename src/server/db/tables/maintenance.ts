// Table types: maintenance windows (issue 5).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface MaintenanceTables {}
