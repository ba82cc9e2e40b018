// One error handler: every error becomes `{error, msg}` with the right status.
// Schema violations and malformed JSON: 400 bad_request naming the field. Unknown route: 404.
// Oversized body: 413. Non-JSON body on a JSON endpoint: 415. A 5xx never shows its cause.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, quoteValue } from '../errors.js';
import { isPgNulError, NUL_MESSAGE } from './nul-guard.js';
import { PLAIN_TEXT_PATTERN, plainTextMessage } from './plain-text.js';
import { textOf } from '../../contract/text.js';

interface ValidationItem {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  /** The schema that refused (Ajv's verbose errors). */
  parentSchema?: {
    description?: unknown;
    'x-error-code'?: unknown;
    properties?: Record<string, { description?: unknown } | boolean>;
    additionalProperties?: unknown;
  };
  /** The value that was refused (Ajv's verbose errors). */
  data?: unknown;
}

/** Fields whose value is never quoted back: they may hold a credential. */
const SECRET_FIELD = /pass|secret|token|key|code|otp|login/i;

/** A field of `data` its schema does not declare, where the schema takes no others. */
function undeclared(item: ValidationItem): string | undefined {
  const s = item.parentSchema;
  const d = item.data;
  if (s?.additionalProperties !== false || d === null || typeof d !== 'object' || Array.isArray(d)) return;
  return Object.keys(d).find((k) => !Object.hasOwn(s.properties ?? {}, k));
}

/**
 * The error that speaks for a refusal: the first, but a rule over several fields (anyOf, oneOf) that
 * says what it wants in its description speaks instead of the branch that happened to fail first.
 */
function speaker(items: ValidationItem[]): ValidationItem | undefined {
  const last = items[items.length - 1];
  if (
    last &&
    (last.keyword === 'anyOf' || last.keyword === 'oneOf') &&
    typeof last.parentSchema?.description === 'string'
  )
    return last;
  return items[0];
}

/**
 * The error code of a schema refusal: bad_request, or the code the published API gives for that rule
 * (a schema's `x-error-code`, e.g. missing_params, for a refusal by any of its rules but its type).
 */
export function validationCode(items: ValidationItem[]): string {
  const first = speaker(items);
  if (first && first !== items[0] && undeclared(first) !== undefined) return 'bad_request';
  const code = first?.parentSchema?.['x-error-code'];
  return typeof code === 'string' && first?.keyword !== 'type' ? code : 'bad_request';
}

/** "body.machine_ids must be array", "body must have required property 'image'" → names the field. */
export function validationMessage(context: string | undefined, items: ValidationItem[]): string {
  const first = speaker(items);
  if (!first) return 'Invalid request';
  const where = (context ?? 'body') + (first.instancePath ? first.instancePath.replace(/\//g, '.') : '');
  // A field the schema does not take is named before a rule over several fields.
  const extra = first !== items[0] ? undeclared(first) : undefined;
  if (extra !== undefined) return `${where}.${extra} is not an allowed field`;
  if (first.keyword === 'required' && first.params?.missingProperty) {
    const name = textOf(first.params.missingProperty);
    // A parameter (query, path, header) says what it takes, as its description in the document.
    const p = first.parentSchema?.properties?.[name];
    const says = context && context !== 'body' && typeof p === 'object' ? p.description : undefined;
    return `${where}.${name} is required${typeof says === 'string' ? `: ${says}` : ''}`;
  }
  if (first.keyword === 'additionalProperties' && first.params?.additionalProperty) {
    return `${where}.${textOf(first.params.additionalProperty)} is not an allowed field`;
  }
  if (first.keyword === 'pattern' && first.params?.pattern === PLAIN_TEXT_PATTERN)
    return plainTextMessage(where);
  // A pattern (or a rule over several fields) says what it wants in its schema's description, not in
  // the regular expression.
  const wanted = first.parentSchema?.description;
  if (
    typeof wanted === 'string' &&
    ['pattern', 'anyOf', 'oneOf', 'contains', 'minProperties'].includes(first.keyword ?? '')
  ) {
    // The refused text is quoted back (shortened), unless the field may hold a credential.
    const shown =
      first.keyword === 'pattern' && typeof first.data === 'string' && !SECRET_FIELD.test(where)
        ? ` ${quoteValue(first.data, 60)}`
        : '';
    return `${where}${shown} is not valid: ${wanted}`;
  }
  if (first.keyword === 'enum' && Array.isArray(first.params?.allowedValues)) {
    return `${where} must be one of: ${(first.params.allowedValues as unknown[]).join(', ')}`;
  }
  return `${where} ${first.message ?? 'is invalid'}`;
}

/** Longest error message sent; longer ones are cut. */
export const MAX_MSG = 300;

export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  msg: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  // A message quotes at most a short piece of what the caller sent (a URL, a bad value).
  const text = msg.length > MAX_MSG ? `${msg.slice(0, MAX_MSG)}…` : msg;
  return reply
    .code(status)
    .type('application/json')
    .send({ ...extra, error: code, msg: text });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Every error reply of the route carries `success: false` as well, whatever refused the
     * request (authentication, its schema, its handler): set where clients read `success` first.
     */
    errorsCarrySuccess?: boolean;
  }
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req: FastifyRequest, reply: FastifyReply) =>
    sendError(reply, 404, 'not_found', `No route for ${req.method} ${req.url.split('?')[0]}`),
  );

  app.setErrorHandler((err: FastifyError | AppError, req: FastifyRequest, reply: FastifyReply) => {
    const carry = req.routeOptions.config?.errorsCarrySuccess === true;
    const send = (status: number, code: string, msg: string, extra: Record<string, unknown> = {}) =>
      sendError(reply, status, code, msg, carry ? { success: false, ...extra } : extra);
    if (err instanceof AppError) {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return send(err.status, err.code, err.message, err.extra);
    }
    const fe = err as FastifyError & { validation?: ValidationItem[]; validationContext?: string };
    if (fe.validation) {
      return send(400, validationCode(fe.validation), validationMessage(fe.validationContext, fe.validation));
    }
    switch (fe.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return send(400, 'bad_request', 'Malformed JSON body');
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(413, 'payload_too_large', 'Request body is too large');
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return send(415, 'unsupported_media_type', 'Content-Type must be application/json');
      default:
        break;
    }
    if (err instanceof SyntaxError) return send(400, 'bad_request', 'Malformed JSON body');
    if (isPgNulError(err)) return send(400, 'bad_request', NUL_MESSAGE);
    const status = typeof fe.statusCode === 'number' ? fe.statusCode : 500;
    if (status >= 400 && status < 500) {
      return send(status, 'bad_request', fe.message || 'Bad request');
    }
    // Log the cause with the request id; the caller only learns that it failed.
    req.log.error({ err }, 'request failed');
    return send(500, 'internal_error', 'Internal server error');
  });
}
