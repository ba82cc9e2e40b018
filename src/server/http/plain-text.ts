// Names and labels the API stores are plain, one-line text: control characters (C0 and C1,
// DEL, and the Unicode line and paragraph separators) are refused with a 400 naming the field.
// Such values reach other people (renters read a host's GPU and host names in maintenance
// e-mails and listings), where a newline could forge lines of a message.
import { AppError } from '../errors.js';

/** A JSON-schema `pattern` for plain text (Ajv compiles patterns with the `u` flag). */
export const PLAIN_TEXT_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]*$';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/u;

export const plainTextMessage = (field: string): string =>
  `${field} must not contain control characters (such as newlines or tabs)`;

/** A string schema for a stored name or label. */
export const plainText = (maxLength: number, extra: Record<string, unknown> = {}) =>
  ({ type: 'string', maxLength, pattern: PLAIN_TEXT_PATTERN, ...extra }) as const;

export function hasControlChars(s: string): boolean {
  return CONTROL.test(s);
}

/** For values checked outside a schema: 400 naming the field. */
export function assertPlainText(field: string, value: string): void {
  if (hasControlChars(value)) throw new AppError(400, 'bad_request', plainTextMessage(field));
}
