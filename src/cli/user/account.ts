// login | logout | show user.
import type { Command } from 'commander';
import type { User } from '../../contract/api-types.js';
import { act, CliFailure, common } from './context.js';
import { configPath, removeConfig, updateConfig } from '../config-file.js';
import { fmtUsd, keyValues, relativeTime, str } from '../output.js';

export function registerAccountCommands(program: Command, show: Command): void {
  common(
    program
      .command('login')
      .option('--no-verify', 'store without asking the server whether the key works')
      .description('store the server URL and API key in ~/.config/openrig/ (mode 0600)'),
    'openrig login --url https://openrig.example.com --api-key or_abc123…',
  ).action(
    act(async (ctx, _a, o) => {
      let who = '';
      if (o.verify !== false) {
        // A typo should fail here, not at the next command.
        const u = await ctx.client.currentUser();
        who = ` as ${u.email}`;
      }
      const p = updateConfig(
        {
          url: ctx.url,
          api_key: ctx.apiKey ?? undefined,
          session_key: undefined,
          session_url: undefined,
          session_api_key_sha256: undefined,
        },
        ctx.env,
      );
      if (ctx.raw) return ctx.printRaw();
      ctx.out(`Logged in to ${ctx.url}${who}. Saved to ${p} (mode 0600).\n`);
    }),
  );

  common(
    program
      .command('logout')
      .option('--everywhere', 'end every session of the account on the server (CLI and browser) first')
      .description('end the stored 2FA session on the server and forget the stored URL, API key and session'),
    'openrig logout\nopenrig logout --everywhere',
  ).action(
    act(
      async (ctx, _a, o) => {
        if (o.everywhere) {
          if (!ctx.apiKey) throw new CliFailure('--everywhere needs a credential: pass --api-key KEY');
          const r = await ctx.client.logoutEverywhere();
          ctx.out(`Ended ${r.sessions_ended} session${r.sessions_ended === 1 ? '' : 's'} on ${ctx.url}.\n`);
        } else if (ctx.client.usingSession) {
          // The stored session ends on the server too; forgetting it locally is not enough.
          await ctx.client.logout().catch((e: unknown) => {
            ctx.err(`openrig: warning: the server did not end the session: ${(e as Error).message}\n`);
          });
        }
        const removed = removeConfig(ctx.env);
        ctx.out(removed ? `Removed ${configPath(ctx.env)}.\n` : 'Nothing stored.\n');
      },
      { needsKey: false },
    ),
  );

  common(show.command('user').description('show your account'), 'openrig show user').action(
    act(async (ctx) => {
      const u = await ctx.client.currentUser();
      if (ctx.raw) return ctx.printRaw();
      ctx.out(userDetail(u, ctx.now()));
    }),
  );
}

export function userDetail(u: User, nowMs: number): string {
  const pairs: [string, string][] = [
    ['ID', str(u.id)],
    ['Email', str(u.email) + (u.email_verified === false ? ' (not verified)' : '')],
    ['Name', str(u.full_name)],
    ['Balance', fmtUsd(u.balance ?? u.credit, 2)],
    ['2FA', str(u.tfa_status)],
  ];
  if (u.team_id) pairs.push(['Team', str(u.team_id)]);
  if (typeof u.created_at === 'number') pairs.push(['Member since', relativeTime(u.created_at, nowMs)]);
  return keyValues(pairs);
}
