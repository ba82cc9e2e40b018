// The e-mails of the teams module: their subjects and texts, and nothing else.

/** An invitation to join a team: the link's last path segment is the single-use token. */
export function inviteMail(p: {
  teamName: string;
  role: string;
  inviter: string;
  link: string;
  ttlDays: number;
}): { subject: string; text: string } {
  return {
    subject: `You are invited to join the team ${p.teamName} on openrig`,
    text:
      `${p.inviter} invited you to join the team "${p.teamName}" on openrig, with the role "${p.role}".\n\n` +
      `Open this link, signed in to your openrig account with this e-mail address, to accept; it works ` +
      `once and expires in ${p.ttlDays} days:\n\n${p.link}\n\n` +
      `If you do not know the team, ignore this e-mail: nothing happens unless you accept.`,
  };
}
