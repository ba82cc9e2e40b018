// The quotas module's e-mails: a month budget at 80 % and at 100 %. Subjects and texts only.

export interface BudgetMailInput {
  /** "team 3", "your membership of team 3", "API key 7 (ci)" */
  what: string;
  month: string;
  budgetUsd: number;
  spentUsd: number;
  level: 80 | 100;
  /** Instances stopped by this check (100 % only). */
  stopped: number[];
}

const usd = (n: number) => `$${n.toFixed(2)}`;

export function budgetMail(p: BudgetMailInput): { subject: string; text: string } {
  if (p.level === 80)
    return {
      subject: `openrig: ${p.what} has spent 80 % of its ${p.month} budget`,
      text:
        `The month budget of ${p.what} is ${usd(p.budgetUsd)} for ${p.month} (UTC); ${usd(p.spentUsd)} of it is spent.\n\n` +
        `When the budget is spent, openrig stops (never destroys) the instances it pays for and refuses new ones until the month ends or the budget is raised.\n`,
    };
  const stopped =
    p.stopped.length > 0
      ? `openrig stopped ${p.stopped.length === 1 ? 'instance' : 'instances'} ${p.stopped.join(', ')}; their disks are kept. `
      : '';
  return {
    subject: `openrig: ${p.what} has spent its ${p.month} budget; its instances are stopped`,
    text:
      `The month budget of ${p.what} is ${usd(p.budgetUsd)} for ${p.month} (UTC); ${usd(p.spentUsd)} is spent.\n\n` +
      `${stopped}New instances are refused (403 quota_exceeded) until the month ends or an owner or manager raises the budget ` +
      `(openrig team limits set --month-budget USD). Start the stopped instances again once it is raised.\n`,
  };
}
