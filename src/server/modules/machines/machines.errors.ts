import { defineErrors } from '../../errors.js';

export const MachineErrors = defineErrors({
  notFound: [404, 'not_found', 'No such machine, or it is not yours'],
  badPrice: [400, 'bad_request', 'price_gpu must be a number of $/hour per GPU, from 0 to 1000'],
  badRequest: [400, 'bad_request', 'Bad request'],
  noOwner: [404, 'not_found', 'No user with that e-mail'],
  inUse: [
    409,
    'machine_in_use',
    'Clients have live instances on this machine; it can be deleted once they are destroyed',
  ],
});
