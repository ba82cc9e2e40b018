// Prices are kept to micro-dollar precision. Rounding at every entry also keeps values such as
// 5e-324 (a subnormal double, which PostgreSQL refuses as out of range) out of the database.
export function roundPrice(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}
