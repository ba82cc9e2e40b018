// Error codes of the agent protocol.
import { defineErrors } from '../../errors.js';

export const AgentErrors = defineErrors({
  agentUidTaken: [
    409,
    'agent_conflict',
    'This agent_uid is registered by another host; start the agent with a fresh --state-dir',
  ],
  duplicateSlot: [400, 'bad_request', 'machines: each slot may appear only once'],
  containerKeyUnreadable: [500, 'internal_error', 'Internal server error'],
});
