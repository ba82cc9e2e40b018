// The teams module's errors. Every body carries `success: false` besides `error` and `msg`: the
// official CLI prints the reply of its team commands, and reads `success` and `msg` where it can.
import { AppError, defineErrors } from '../../errors.js';

const E = defineErrors({
  badRequest: [400, 'bad_request', 'Bad request'],
  teamContextRequired: [
    400,
    'team_context_required',
    'This is a team command: use a team API key (create team and accepting an invitation print one), or switch the console to the team',
  ],
  personalContextRequired: [
    400,
    'personal_context_required',
    'This is done from your own account, not from a team: use your personal API key',
  ],
  alreadyMember: [400, 'already_member', 'That person is a member of the team already'],
  noSuchRole: [400, 'no_such_role', 'The team has no role of that name'],
  roleInUse: [400, 'role_in_use', 'Members or pending invitations have this role: give them another first'],
  ownerFixed: [400, 'owner_fixed', "The team's owner cannot be removed and their role does not change"],
  notOwner: [403, 'forbidden', "Only the team's owner can do this"],
  beyondOwn: [403, 'forbidden', 'You cannot grant permissions your own role does not hold'],
  notForYou: [
    403,
    'forbidden',
    'This invitation was sent to another e-mail address: sign in as that account to accept it',
  ],
  notFound: [404, 'not_found', 'Not found'],
  nameTaken: [409, 'conflict', 'That name is taken'],
  inviteGone: [
    410,
    'invite_expired',
    'This invitation link was used, replaced or has expired: ask for a new one',
  ],
  hasInstances: [400, 'team_has_instances', 'The team still has instances: destroy them first'],
  lowBalance: [400, 'insufficient_balance', 'Your balance does not cover that transfer'],
});

const withSuccess =
  (f: (typeof E)[keyof typeof E]) =>
  (msg?: string): AppError =>
    f(msg, { success: false });

export const TeamErrors = Object.fromEntries(Object.entries(E).map(([k, f]) => [k, withSuccess(f)])) as {
  [K in keyof typeof E]: (msg?: string) => AppError;
};
