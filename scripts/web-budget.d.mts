export const BUDGET_KB: number;
export interface BudgetFile {
  file: string;
  gzip: number;
}
export function measure(webDir?: string): {
  budgetKb: number;
  firstLoadGzip: number;
  initial: BudgetFile[];
  lazy: BudgetFile[];
};
