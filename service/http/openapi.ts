import { OpenAPIHono } from '@hono/zod-openapi';
import type { Scope } from '../../shared/scopes.js';
import { ErrorBodySchema } from '../../shared/errors.js';
import type { AppEnv } from './env.js';
import { validationError } from './handle-error.js';

/** A router whose request validation failures become the one 400 envelope, naming each field. */
export function createApiRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error as never, result.target === 'json' ? 'body' : result.target);
    },
  });
}

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input; `error.details.issues` names each bad field',
  401: 'Missing, invalid, expired or revoked credential',
  403: 'The credential lacks the required scope, or the operation is forbidden',
  404: 'Not found (or owned by another account)',
  405: 'Method not enabled',
  409: 'Conflict, e.g. a taken name',
  413: 'Body too large',
  415: 'Unsupported content',
  429: 'A quota or rate limit was reached; see Retry-After',
  500: 'Internal failure; details are not exposed',
};

/** A JSON response of a route: its schema and what it means. */
export const jsonResponse = <T>(schema: T, description: string) => ({ description, content: { 'application/json': { schema } } });

/** A route's required JSON request body. */
export const jsonBody = <T>(schema: T) => ({ required: true, content: { 'application/json': { schema } } });

/** The error responses of a route, all with the shared envelope. */
export function errorResponses(...statuses: number[]) {
  const out: Record<number, ReturnType<typeof jsonResponse<typeof ErrorBodySchema>>> = {};
  for (const s of [...statuses, 500]) out[s] = jsonResponse(ErrorBodySchema, ERROR_DESCRIPTIONS[s] ?? 'Error');
  return out;
}

/** Security requirement: a personal key or an OAuth token, either carrying `scope`. */
export function securityFor(scope: Scope): Record<string, string[]>[] {
  return [{ personalKey: [scope] }, { oauth2: [scope] }];
}

export const AUTHED_ERRORS = [400, 401, 403, 429] as const;
