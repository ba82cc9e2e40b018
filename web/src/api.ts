// The console talks to the public API only, through the typed client, signed in by the session
// cookie the login sets, on the console's own origin. Every write carries the anti-forgery header
// the server requires of cookie-authenticated writes (the client's cookie-session mode).
import { ApiError, OpenrigClient } from '../../src/client/client';

export { ApiError };

/** No timeout of its own: a request waits as long as the browser and the server allow. */
export const client = new OpenrigClient({ url: location.origin, cookieSession: true, timeoutMs: 0 });

export const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));
