// Errors Node's HTTP parser raises before a request exists (no route, no hooks, no error handler):
// a request line or headers over the size limit, garbage in the request line, bad chunked
// encoding, Content-Length together with Transfer-Encoding. They answer the product's
// `{"error": code, "msg": text}` body like every other error, then the connection closes (the
// parser's state is unusable after such an error).
import type { Socket } from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance } from 'fastify';

interface ClientError extends Error {
  code?: string;
}

/** Status, code and message for a parser error. */
export function clientErrorReply(err: ClientError): { status: number; error: string; msg: string } {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, error: 'request_timeout', msg: 'The request was not received in time' };
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        error: 'headers_too_large',
        msg: 'The request line or headers are too large',
      };
    default:
      return { status: 400, error: 'bad_request', msg: 'The HTTP request is malformed' };
  }
}

/** Fastify's `clientErrorHandler`: called with the app as `this`. */
export function clientErrorHandler(this: FastifyInstance, err: ClientError, socket: Socket): void {
  // A reset connection has no one left to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const r = clientErrorReply(err);
  this.log.debug({ code: err.code }, 'client error');
  if (socket.writable) {
    const body = JSON.stringify({ error: r.error, msg: r.msg });
    socket.write(
      `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status]}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Content-Type: application/json\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
