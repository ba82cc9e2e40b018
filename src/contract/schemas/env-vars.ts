// The official CLI's env-var calls, all on /api/v0/secrets/: show env-vars (GET), create env-var
// (POST {key, value}), update env-var (PUT {key, value}) and delete env-var (DELETE {key}, a JSON
// body). The bodies are checked further by the server, whose messages name the rule broken.
import { authErrors, errorSchema, successSchema } from './common.js';
import { ENV_VAR_LIMITS as L } from '../env-var-rules.js';

const tags = ['env-vars'] as const;

const key = {
  type: 'string',
  description: `the variable name: [A-Za-z_][A-Za-z0-9_]*, at most ${L.name} characters; names openrig sets in every instance (CONTAINER_ID, OPENRIG_…) are refused`,
} as const;
const value = { type: 'string', description: `at most ${L.value} characters` } as const;

export const keyValueBody = {
  type: 'object',
  required: ['key', 'value'],
  properties: { key, value },
  additionalProperties: true,
} as const;

export const envVarsReply = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    secrets: {
      type: 'object',
      additionalProperties: { type: 'string' },
      description: 'NAME: value',
    },
  },
} as const;

export const listEnvVars = {
  method: 'GET',
  url: '/api/v0/secrets',
  schema: {
    tags,
    summary: "Your account's environment variables with their values",
    response: { 200: envVarsReply, ...authErrors },
  },
} as const;

export const createEnvVar = {
  method: 'POST',
  url: '/api/v0/secrets',
  schema: {
    tags,
    summary: `Add an environment variable that every instance you create from now on gets (at most ${L.perAccount})`,
    body: keyValueBody,
    response: { 200: successSchema, ...authErrors, 409: errorSchema },
  },
} as const;

export const updateEnvVar = {
  method: 'PUT',
  url: '/api/v0/secrets',
  schema: {
    tags,
    summary: 'Change the value of one of your environment variables (instances created from now on)',
    body: keyValueBody,
    response: { 200: successSchema, ...authErrors },
  },
} as const;

export const deleteEnvVar = {
  method: 'DELETE',
  url: '/api/v0/secrets',
  schema: {
    tags,
    summary: 'Delete one of your environment variables (instances created from now on)',
    body: { type: 'object', required: ['key'], properties: { key }, additionalProperties: true },
    response: { 200: successSchema, ...authErrors },
  },
} as const;
