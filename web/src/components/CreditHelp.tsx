// A renter with no credit left is told how to get some on this installation: the operator's own
// words (OPENRIG_CREDIT_HELP, the user object's credit_help), shown while the balance is $0 or less.
import { Note } from '../ui';

export function CreditHelp({ balance, help }: { balance: number | undefined; help: string | undefined }) {
  if (balance === undefined || balance > 0 || !help) return null;
  return (
    <Note kind="warn">
      <strong>Your balance is $0.</strong> Instances cannot start or keep running without credit. {help}
    </Note>
  );
}
