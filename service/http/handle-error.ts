import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { ZodError } from 'zod';
import type { ErrorBody } from '../../shared/errors.js';
import { isDatabaseUnavailable, isNulCharacter } from '../db/client.js';
import type { Logger } from '../kernel/logger.js';
import { AppError } from '../kernel/app-error.js';

/** Turns zod issues into `[{field, message}]`, naming each bad field with its path. */
export function zodIssues(err: ZodError): { field: string; message: string }[] {
  return err.issues.map((i) => ({ field: i.path.map(String).join('.') || '(body)', message: issueMessage(i.message) }));
}

/** zod's "Invalid input: expected string, received undefined" for a field left out says what it means: required. */
function issueMessage(message: string): string {
  const missing = /^Invalid input: expected (.+), received undefined$/.exec(message);
  return missing ? `required (${missing[1]}), missing` : message;
}

export function validationError(err: ZodError, where: string): AppError {
  const issues = zodIssues(err);
  const summary = issues.map((i) => `${i.field}: ${i.message}`).join('; ');
  return new AppError('validation_failed', `invalid ${where}: ${summary}`, { issues });
}

/** Maps anything thrown to the envelope; only unexpected errors are logged, and never leak details. */
export function toAppError(err: unknown, log?: Logger): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ZodError) return validationError(err, 'input');
  if (err instanceof HTTPException) {
    if (err.status === 413) return new AppError('payload_too_large', 'request body is too large');
    if (err.status === 400) return new AppError('bad_request', err.message || 'bad request');
    if (err.status === 401) return new AppError('unauthorized', err.message || 'unauthorized');
    if (err.status === 404) return new AppError('not_found', err.message || 'not found');
  }
  if (err instanceof SyntaxError) return new AppError('bad_request', `body is not valid JSON: ${err.message}`);
  if (isNulCharacter(err))
    return new AppError('validation_failed', 'the request holds a NUL character (\\u0000), which cannot be stored; remove it and send again', {
      issues: [{ field: '(request)', message: 'NUL character' }],
    });
  // Before the database test: a chain RPC that refuses connections carries the same ECONNREFUSED.
  if (isChainRpcUnavailable(err)) {
    log?.warn('chain RPC unavailable', { error: err instanceof Error ? err.message : String(err) });
    return new AppError(
      'service_unavailable',
      'the payment chain (its RPC endpoint) is not answering; nothing was charged. Retry in a few seconds.',
      undefined,
      {
        'retry-after': '5',
      },
    );
  }
  if (isDatabaseUnavailable(err)) {
    log?.warn('database unavailable', { error: err instanceof Error ? err.message : String(err) });
    return new AppError('service_unavailable', 'the database is not answering; retry in a few seconds', undefined, { 'retry-after': '5' });
  }
  if (isStorageFull(err)) {
    log?.error('storage full: a write was refused', { error: (err as Error).message });
    return new AppError('insufficient_storage', 'the service is out of storage space; nothing of this request was kept. Retry later.', undefined, {
      'retry-after': '60',
    });
  }
  log?.error('unhandled error', { error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  return new AppError('internal', 'internal error; it was logged. Retry later, or report the X-Request-Id.');
}

/** A viem request to the chain's RPC that got no answer (viem's HttpRequestError, anywhere in the causes). */
export function isChainRpcUnavailable(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 4 && e; i++) {
    if ((e as { name?: unknown }).name === 'HttpRequestError') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** A write refused by a full disk or an exhausted volume quota. */
export function isStorageFull(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}

export function errorBody(err: AppError, requestId?: string): ErrorBody {
  return {
    ok: false,
    error: { code: err.code, message: err.message, ...(err.details !== undefined ? { details: err.details } : {}), requestId },
  };
}

export function respondWithError(c: Context, err: unknown, log?: Logger): Response {
  const e = toAppError(err, log);
  const requestId = c.get('requestId' as never) as string | undefined;
  const res = c.json(errorBody(e, requestId), e.status as 400);
  for (const [k, v] of Object.entries(e.headers ?? {})) res.headers.set(k, v);
  return res;
}
