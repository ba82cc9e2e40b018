// Limits on JSON request bodies that hold before anything walks the parsed value: a body nested
// deeper than MAX_JSON_DEPTH arrays and objects is refused by the parser with a 400 naming the
// limit. No field of this API nests more than a few levels; thousands of levels made recursive
// code (validation, filter compilation, error messages) overflow the stack.
import { AppError } from '../errors.js';

export const MAX_JSON_DEPTH = 32;

export const tooDeep = (): AppError =>
  new AppError(400, 'bad_request', `JSON body is nested too deeply (at most ${MAX_JSON_DEPTH} levels)`);

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text opens more than `max` arrays or objects inside one another. One pass
 * over the text, skipping string contents; malformed text is left to the parser.
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}
