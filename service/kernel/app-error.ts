import { ERROR_STATUS, type ErrorCode } from '../../shared/errors.js';

/**
 * The one error type of the service. Domain code throws it; `handleError` (app.ts) turns it into the
 * JSON envelope. Never build an error response by hand in a route.
 */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
    this.status = ERROR_STATUS[code];
  }
}

export const badRequest = (message: string, details?: unknown) => new AppError('validation_failed', message, details);
export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

/** A 400 naming one field of the input: "`field`: `message`", with the field in `details.issues` as validation errors have it. */
export const invalidField = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { issues: [{ field, message }] });
