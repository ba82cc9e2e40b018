// Teams (docs/teams.md): the official CLI's team, team-role and member commands on /api/v0/team/,
// and the console's calls (the caller's teams, switching a session to a team, reading an
// invitation before accepting it). Role permissions are written like an API key's: the
// marketplace's `{"api": {category: {}}}` or openrig's `{family: "read"|"write"}`.
import { authErrors, errorSchema, plainText, rowId, successReply, successSchema } from './common.js';

const tags = ['teams'] as const;

const teamName = plainText(64, {
  minLength: 1,
  description: "the team's name: 1 to 64 characters, unique among teams",
});
const roleName = plainText(64, { minLength: 1, description: "the role's name, unique within the team" });
const permissions = {
  description:
    'as an API key\'s: {"api": {"instance_read": {}, "team_write": {}, …}} (categories instance_, user_, billing_, machine_, team_ read/write, misc) or {family: "read"|"write"}',
} as const;

export const roleSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    identifier: { type: 'string', description: 'the name in lower case, words joined by _' },
    permissions: { description: 'as given, or (the default roles) in the marketplace format' },
    members: { type: 'integer', description: 'members who have the role' },
  },
} as const;

export const memberSchema = {
  type: 'object',
  properties: {
    id: { type: 'integer', description: "the member's user id (remove member ID)" },
    username: { type: 'string' },
    email: { type: 'string' },
    fullname: { type: 'string' },
    roles: { type: 'array', items: { type: 'string' } },
    is_owner: { type: 'boolean' },
    joined_at: { type: 'number', description: 'epoch seconds' },
  },
} as const;

const keyReply = {
  team_id: { type: 'integer' },
  team_name: { type: 'string' },
  role: { type: 'string' },
  api_key: { type: 'string', description: 'a team key for the caller, shown once; it acts within the role' },
} as const;

export const createTeam = {
  method: 'POST',
  url: '/api/v0/team',
  schema: {
    tags,
    summary:
      'Create a team (its own account and balance, roles owner, manager and member); you are its owner',
    body: {
      type: 'object',
      required: ['team_name'],
      properties: {
        team_name: teamName,
        transfer_credit: {
          type: ['number', 'string', 'null'],
          description: 'dollars of your balance to move to the team',
        },
      },
      additionalProperties: true,
    },
    response: { 200: successReply(keyReply), ...authErrors, 409: errorSchema },
  },
} as const;

export const destroyTeam = {
  method: 'DELETE',
  url: '/api/v0/team',
  schema: {
    tags,
    summary:
      'Destroy the team (its owner, with a team key): its keys stop, its members leave, its balance returns to the owner; refused while it has instances',
    response: { 200: successSchema, ...authErrors },
  },
} as const;

const inviteFields = {
  email: {
    type: 'string',
    maxLength: 254,
    pattern: '^\\s*[^\\s@]+@[^\\s@]+\\.[^\\s@]+\\s*$',
    description: 'an e-mail address, e.g. student@example.edu',
  },
  role: { type: 'string', maxLength: 64 },
} as const;

export const inviteMember = {
  method: 'POST',
  url: '/api/v0/team/invite',
  schema: {
    tags,
    summary: 'E-mail an invitation to join the team with a role (a single-use link that expires)',
    querystring: { type: 'object', properties: inviteFields },
    response: {
      200: successReply({
        email: { type: 'string' },
        role: { type: 'string' },
        expires_at: { type: 'number' },
      }),
      ...authErrors,
    },
  },
} as const;

const tokenParams = {
  type: 'object',
  required: ['token'],
  properties: {
    token: {
      type: 'string',
      pattern: '^[A-Za-z0-9_-]{24,128}$',
      example: 'Xk3v9Qm2Lp8Rt6Wz1Bn4Cy7Df0Gh5Js2',
      description: "the invitation's token: the last path segment of the e-mailed link",
    },
  },
} as const;

export const showInvite = {
  method: 'GET',
  url: '/api/v0/team/invite/:token',
  schema: {
    tags,
    summary: 'What an invitation is for (the console shows it before it is accepted)',
    params: tokenParams,
    response: {
      200: {
        type: 'object',
        properties: {
          team_name: { type: 'string' },
          role: { type: 'string' },
          email: { type: 'string' },
          expires_at: { type: 'number' },
          for_you: { type: 'boolean', description: 'the invitation is for the signed-in account' },
        },
      },
      ...authErrors,
      410: errorSchema,
    },
  },
} as const;

export const acceptInvite = {
  method: 'POST',
  url: '/api/v0/team/invite/:token',
  schema: {
    tags,
    summary: 'Accept an invitation (its token), as the account it was sent to; answers with a team key',
    params: tokenParams,
    response: { 200: successReply(keyReply), ...authErrors, 410: errorSchema },
  },
} as const;

export const listMembers = {
  method: 'GET',
  url: '/api/v0/team/members',
  schema: {
    tags,
    summary: "The team's members with their roles",
    response: { 200: { type: 'array', items: memberSchema }, ...authErrors },
  },
} as const;

const idParams = { type: 'object', required: ['id'], properties: { id: rowId } } as const;

export const removeMember = {
  method: 'DELETE',
  url: '/api/v0/team/members/:id',
  schema: {
    tags,
    summary: 'Remove a member (never the owner): their team keys are revoked at once',
    params: idParams,
    response: { 200: successSchema, ...authErrors },
  },
} as const;

export const setMemberRole = {
  method: 'PUT',
  url: '/api/v0/team/members/:id',
  schema: {
    tags,
    summary: "Give a member another role (not the owner's)",
    params: idParams,
    body: { type: 'object', required: ['role'], properties: { role: roleName }, additionalProperties: true },
    response: { 200: successSchema, ...authErrors },
  },
} as const;

export const createRole = {
  method: 'POST',
  url: '/api/v0/team/roles',
  schema: {
    tags,
    summary: 'Add a role to the team',
    body: {
      type: 'object',
      required: ['name', 'permissions'],
      properties: { name: roleName, permissions },
      additionalProperties: true,
    },
    response: { 200: successReply(roleSchema.properties), ...authErrors, 409: errorSchema },
  },
} as const;

const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 64 } },
} as const;

export const showRole = {
  method: 'GET',
  url: '/api/v0/team/roles/:name',
  schema: {
    tags,
    summary: 'One role of the team, by its name',
    params: nameParams,
    response: { 200: roleSchema, ...authErrors },
  },
} as const;

export const listRoles = {
  method: 'GET',
  url: '/api/v0/team/roles-full',
  schema: {
    tags,
    summary: "The team's roles with their permissions",
    response: { 200: { type: 'array', items: roleSchema }, ...authErrors },
  },
} as const;

export const updateRole = {
  method: 'PUT',
  url: '/api/v0/team/roles/:name',
  schema: {
    tags,
    summary:
      "Rename a role or change its permissions, by its numeric id (narrowed: its members' team keys are revoked)",
    params: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: '^[0-9]{1,15}$', description: "the role's numeric id" },
      },
    },
    body: {
      type: 'object',
      properties: { name: { anyOf: [roleName, { type: 'null' }] }, permissions },
      // A field sent as null (or an empty name) changes nothing.
      anyOf: [
        { required: ['name'], properties: { name: { type: 'string', minLength: 1 } } },
        { required: ['permissions'], properties: { permissions: { not: { type: 'null' } } } },
      ],
      description: 'a new name, permissions, or both',
      additionalProperties: true,
    },
    response: {
      200: successReply({
        ...roleSchema.properties,
        msg: { type: 'string' },
        revoked_keys: {
          type: 'integer',
          description: "team keys of the role's members revoked because the role was narrowed",
        },
      }),
      ...authErrors,
      409: errorSchema,
    },
  },
} as const;

export const removeRole = {
  method: 'DELETE',
  url: '/api/v0/team/roles/:name',
  schema: {
    tags,
    summary: 'Remove a role, by its name (not the owner role, nor a role a member or invitation has)',
    params: nameParams,
    response: { 200: successSchema, ...authErrors },
  },
} as const;

export const myTeams = {
  method: 'GET',
  url: '/api/v0/team/mine',
  schema: {
    tags,
    summary: 'The teams you are a member of, and which one this credential acts for',
    response: {
      200: {
        type: 'object',
        properties: {
          current: {
            type: ['integer', 'null'],
            description: 'the team this credential acts for; null: personal',
          },
          teams: {
            type: 'array',
            items: {
              type: 'object',
              properties: {
                id: { type: 'integer' },
                name: { type: 'string' },
                role: { type: 'string' },
                is_owner: { type: 'boolean' },
              },
            },
          },
        },
      },
      ...authErrors,
    },
  },
} as const;

export const switchTeam = {
  method: 'POST',
  url: '/api/v0/team/switch',
  schema: {
    tags,
    summary: 'Switch this signed-in session to one of your teams, or back to your own account (null)',
    body: {
      type: 'object',
      required: ['team_id'],
      properties: { team_id: { anyOf: [rowId, { type: 'null' }] } },
      additionalProperties: true,
    },
    response: { 200: successReply({ team_id: { type: ['integer', 'null'] } }), ...authErrors },
  },
} as const;
