// Table types: 2FA methods, challenges, backup codes (issues 6, 7).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface TwoFactorTables {}
