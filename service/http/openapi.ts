import { OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { Scope } from '../../shared/scopes.js';
import { ErrorBodySchema } from '../../shared/errors.js';
import type { AppEnv } from '../kernel/request-env.js';
import { validationError } from './handle-error.js';
import { checksDeclaredFields } from '../../shared/undeclared-fields.js';
import { refuseUndeclaredFields } from './known-fields.js';

/**
 * A router whose request validation failures become the one 400 envelope, naming each field, and
 * whose JSON bodies may not name a field their schema does not declare (known-fields.ts): every
 * route's body is checked after its own middleware (a caller without a credential gets 401 first).
 */
export function createApiRouter(): OpenAPIHono<AppEnv> {
  const router = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw validationError(result.error as never, result.target === 'json' ? 'body' : result.target);
    },
  });
  const register = router.openapi.bind(router);
  router.openapi = ((route: RouteConfig, ...rest: unknown[]) =>
    (register as (...a: unknown[]) => unknown)(withDeclaredFieldsOnly(route), ...rest)) as typeof router.openapi;
  return router;
}

/** The route with a last middleware that refuses body fields its JSON schema does not declare. */
function withDeclaredFieldsOnly(route: RouteConfig): RouteConfig {
  const media = route.request?.body?.content?.['application/json'];
  const schema = media && 'schema' in media ? media.schema : undefined;
  if (!checksDeclaredFields(schema)) return route;
  const check: MiddlewareHandler = async (c, next) => {
    // A body that is not JSON is left to the validator, which says so.
    const parsed = await c.req.json().catch(() => undefined);
    refuseUndeclaredFields(parsed, schema);
    await next();
  };
  const own = route.middleware === undefined ? [] : Array.isArray(route.middleware) ? route.middleware : [route.middleware];
  return { ...route, middleware: [...own, check] };
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
