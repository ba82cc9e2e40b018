// Names and labels the API stores are plain, one-line text: control characters (C0 and C1,
// DEL, and the Unicode line and paragraph separators) and invisible format characters (Unicode
// category Cf: bidirectional embeddings, overrides and isolates, zero-width spaces and joiners,
// word joiners, the byte order mark, invisible operators, tag characters) are refused with a 400
// naming the field. Such values reach other people (renters read a host's GPU and host names in
// maintenance e-mails and listings), where a newline could forge lines of a message and a
// bidirectional override could show text in another order than it is stored. One format character
// is needed by ordinary text: the zero-width joiner between two emoji, which draws them as one
// (a person and a laptop as a technologist), so it is accepted there and only there.
import { AppError } from '../errors.js';
import { PLAIN_TEXT_PATTERN, plainText } from '../../contract/schemas/common.js';

/** A JSON-schema `pattern` for plain text, and a stored name's schema (src/contract/schemas/common.ts). */
export { PLAIN_TEXT_PATTERN, plainText };

const PLAIN = new RegExp(PLAIN_TEXT_PATTERN, 'u');

export const plainTextMessage = (field: string): string =>
  `${field} must not contain control characters (such as newlines or tabs) or invisible formatting characters (such as bidirectional overrides)`;

/** True when `s` holds a control or format character that plain text refuses. */
export function hasControlChars(s: string): boolean {
  return !PLAIN.test(s);
}

/** For values checked outside a schema: 400 naming the field. */
export function assertPlainText(field: string, value: string): void {
  if (hasControlChars(value)) throw new AppError(400, 'bad_request', plainTextMessage(field));
}
