// `openrig admin create-machines` (operator contract): listed machines with no agent; prints
// {"machine_ids": [...]}. Their instances stay provisioning until an agent adopts them.
import type { Command } from 'commander';
import { adminAction, dbOptions, withStore, type DbOpts } from './admin-store.js';

export function registerAdminMarket(admin: Command): void {
  dbOptions(admin.command('create-machines'))
    .description('create listed machines owned by a user and print {machine_ids}')
    .requiredOption('--owner-email <email>', 'e-mail of the host that owns them')
    .requiredOption('--gpu-name <name>', 'GPU model, e.g. "RTX 4090"')
    .requiredOption('--num-gpus <n>', 'GPUs per machine')
    .option('--count <c>', 'how many machines', '1')
    .option('--price-gpu <dph>', 'on-demand price, $/hour per GPU (default 0.40)')
    .addHelpText(
      'after',
      '\nExample:\n  openrig admin create-machines --owner-email host@example.com --gpu-name "RTX 4090" --num-gpus 2 --count 3 --price-gpu 0.5',
    )
    .action(
      async (
        o: DbOpts & {
          ownerEmail: string;
          gpuName: string;
          numGpus: string;
          count: string;
          priceGpu?: string;
        },
      ) =>
        adminAction(async () => {
          const [{ createMachines }, { systemClock }] = await Promise.all([
            import('../server/modules/machines/machines.service.js'),
            import('../server/clock.js'),
          ]);
          return withStore(o, (store) =>
            createMachines(
              { store, clock: systemClock },
              {
                ownerEmail: o.ownerEmail,
                gpuName: o.gpuName,
                numGpus: Number(o.numGpus),
                count: Number(o.count),
                priceGpu: o.priceGpu === undefined ? undefined : Number(o.priceGpu),
              },
            ),
          );
        }),
    );

  dbOptions(admin.command('verify-machine'))
    .description('mark a machine verified (or --unverify it); prints {id, verification}')
    .requiredOption('--id <id>', 'machine ID')
    .option('--unverify', 'mark it unverified instead')
    .addHelpText('after', '\nExample:\n  openrig admin verify-machine --id 12')
    .action(async (o: DbOpts & { id: string; unverify?: boolean }) =>
      adminAction(async () => {
        const id = Number(o.id);
        if (!Number.isInteger(id) || id < 1) throw new Error('--id must be a machine ID');
        const { operatorSetVerification } =
          await import('../server/modules/benchmarks/benchmarks.service.js');
        return withStore(o, (store) => operatorSetVerification({ db: store.db }, id, !o.unverify));
      }),
    );
}
