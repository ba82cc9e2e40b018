// The user commands of `openrig` (docs/cli.md), each group in its own file, all over the typed client
// in src/client/. Exit codes: 0 success, 1 API error (the server's `msg` on stderr), 2 usage error.
import type { Command } from 'commander';
import { registerAccountCommands } from './account.js';
import { registerAuditCommands } from './audit.js';
import { registerInstanceCommands } from './instances.js';
import { registerKeyCommands } from './keys.js';
import { registerMachineCommands } from './machines.js';
import { registerOfferCommands } from './offers.js';
import { registerTemplateCommands } from './templates.js';
import { registerBillingCommands } from './billing.js';
import { registerEnvVarCommands } from './env-vars.js';
import { registerTfaCommands } from './tfa.js';
import { registerWebhookCommands } from './webhooks.js';
import { registerVolumeCommands } from './volumes.js';
import { registerQuotaCommands } from './quotas.js';
import { registerTeamCommands } from './teams.js';
import { registerReportCommands } from './reports.js';

export function registerUserCommands(program: Command): void {
  const group = (name: string, description: string) => program.command(name).description(description);
  const search = group('search', 'search offers');
  const create = group('create', 'create an instance, a template or an environment variable');
  const show = group(
    'show',
    'show instances, machines, earnings, invoices, maintenance windows, templates, environment variables, webhooks, events, your account, its audit log and addresses',
  );
  const stop = group('stop', 'stop instances');
  const start = group('start', 'start stopped instances');
  const destroy = group('destroy', 'destroy instances');
  const update = group('update', "update an instance's configuration or an environment variable");
  const del = group('delete', 'delete templates, environment variables and machines');
  const label = group('label', 'label an instance');
  const reboot = group('reboot', 'restart an instance (its disk is kept)');
  const recycle = group('recycle', 'pull the image again and recreate an instance');
  const list = group('list', 'offer a machine for rent (hosts)');
  const unlist = group('unlist', 'stop offering a machine (hosts)');
  const schedule = group('schedule', 'schedule maintenance (hosts)');
  const cancel = group('cancel', 'cancel maintenance (hosts)');
  const set = group('set', 'change your account settings');
  const apiKey = group('api-key', 'create, show and delete API keys');
  const sshKey = group('ssh-key', 'add, show and delete SSH public keys');
  const tfa = group('tfa', 'two-factor authentication');
  const webhook = group('webhook', 'create, test and delete webhooks');

  registerAccountCommands(program, show, set);
  registerOfferCommands(search, create);
  registerInstanceCommands(show, program, { stop, start, destroy, label, reboot, recycle, update });
  registerMachineCommands({ show, list, unlist, schedule, cancel, del });
  registerKeyCommands(apiKey, sshKey);
  registerTfaCommands(tfa);
  registerWebhookCommands(webhook, show);
  registerTemplateCommands(show, create, del);
  registerBillingCommands(show);
  registerAuditCommands(show);
  registerEnvVarCommands(show, create, update, del);
  registerTeamCommands(group('team', 'teams: create one, invite and remove members, roles (docs/teams.md)'));
  registerQuotaCommands(program, show);
  registerReportCommands(program);
  registerVolumeCommands(
    group('volumes', 'local volumes: offer disk for them (hosts), search, create, show and delete them'),
  );
  program.addHelpText(
    'after',
    `
User commands find the server and key in --url / --api-key, else OPENRIG_URL / OPENRIG_API_KEY,
else what \`openrig login\` stored in ~/.config/openrig/config.json (mode 0600).
Every user command takes --raw (the server's JSON unchanged). Exit codes: 0 success, 1 API error
(the server's message on stderr), 2 usage error.

Example:
  openrig login --url http://127.0.0.1:8080 --api-key or_…
  openrig search offers 'gpu_name=RTX_4090 num_gpus>=1' -o dph_total
  openrig create instance 1 --image ubuntu:22.04 --disk 20 --wait`,
  );
}
