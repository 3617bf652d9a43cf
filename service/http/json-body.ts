import type { MiddlewareHandler } from 'hono';
import { AppError } from '../kernel/app-error.js';

const JSON_TYPE = /^application\/([\w.+-]+\+)?json\s*(;|$)/i;

/**
 * The Account API reads JSON bodies only: a body of another type (a form, plain text, none named) is
 * a 415 that says what to send, before any route reads it. Requests without a body pass.
 */
export function requireJsonBody(): MiddlewareHandler {
  return async (c, next) => {
    const method = c.req.method;
    if (method !== 'POST' && method !== 'PUT' && method !== 'PATCH') return next();
    const length = c.req.header('content-length');
    const hasBody = (length !== undefined && length !== '0') || c.req.header('transfer-encoding') !== undefined;
    const type = c.req.header('content-type') ?? '';
    if (hasBody && !JSON_TYPE.test(type)) {
      throw new AppError('unsupported_media_type', `send the body as application/json (got ${type ? `"${type.slice(0, 100)}"` : 'no Content-Type'})`);
    }
    return next();
  };
}
