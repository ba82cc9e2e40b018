// Table types: agent protocol state (issue 4).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface AgentTables {}
