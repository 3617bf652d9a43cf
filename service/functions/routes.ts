import { createRoute } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import {
  CreateFunctionBodySchema,
  DeleteFunctionResponseSchema,
  FunctionListQuerySchema,
  FunctionListResponseSchema,
  FunctionResponseSchema,
  INVOKE_MAX_REQUEST_BYTES,
  InvokeFunctionBodySchema,
  InvokeFunctionResponseSchema,
  FunctionAccessBodySchema,
  ReplaceDraftBodySchema,
} from '../../shared/account-api/functions.js';
import { requireScope } from '../auth/require-scope.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { AppEnv } from '../kernel/request-env.js';
import { createApiRouter, errorResponses, securityFor, jsonBody, jsonResponse } from '../http/openapi.js';
import {
  createFunction,
  deleteFunction,
  findOwnedFunction,
  listOwnedFunctions,
  ownedFunctionId,
  publishFunction,
  replaceDraft,
  setAllowUserInvoke,
  viewFunction,
} from './functions.js';
import { assertInvokeCredential, invokeFunction } from './invoke.js';

const FunctionIdParam = z.object({ functionId: z.string().min(1).describe('Function id (`fn_…`) or slug') });
const SlugParam = z.object({ slug: z.string().min(1).max(63).describe('Function slug') });

/** Only personal keys may invoke (checked before the body is read). */
const personalKeyOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  assertInvokeCredential(c.var.principal);
  await next();
};

/** The spec's 128 KiB invoke limit, on top of the app-wide 1 MiB JSON limit. */
const invokeBodyLimit = bodyLimit({
  maxSize: INVOKE_MAX_REQUEST_BYTES,
  onError: () => {
    throw new AppError('payload_too_large', `invoke request bodies are at most ${INVOKE_MAX_REQUEST_BYTES} bytes (128 KiB)`, {
      maxBytes: INVOKE_MAX_REQUEST_BYTES,
    });
  },
});

const listFunctionsRoute = createRoute({
  method: 'get',
  path: '/functions',
  tags: ['Functions'],
  summary: 'List owned Functions',
  security: securityFor('svc.functions.read'),
  request: { query: FunctionListQuerySchema },
  responses: { 200: jsonResponse(FunctionListResponseSchema, 'Functions of the account, newest first'), ...errorResponses(400, 401, 403, 429) },
});

const createFunctionRoute = createRoute({
  method: 'post',
  path: '/functions',
  tags: ['Functions'],
  summary: 'Create a Function',
  description:
    'Creates a Function with `code` as its draft (not yet live: publish it). The code must compile as an ES module whose default export is the handler. `allowUserInvoke` (default false) opens the live version to other accounts’ personal keys.',
  security: securityFor('svc.functions.write'),
  request: { body: jsonBody(CreateFunctionBodySchema) },
  responses: { 201: jsonResponse(FunctionResponseSchema, 'Created'), ...errorResponses(400, 401, 403, 409, 413, 429) },
});

const invokeFunctionRoute = createRoute({
  method: 'post',
  path: '/functions/invoke/{slug}',
  tags: ['Functions'],
  summary: 'Invoke a live Function that allows svc users',
  description:
    'Runs the live version of the Function in a fresh QuickJS sandbox. Personal API keys only (OAuth tokens: 403). Another account’s Function must be live with `allowUserInvoke`; otherwise 404. Request bodies over 128 KiB: 413. Response content over 256 KiB is cut and `response.truncated` is true. A failing Function (throw, timeout, out of memory, invalid return) answers 502 `function_failed` with `details.reason`.',
  security: [{ personalKey: ['svc.functions.invoke'] }],
  request: { params: SlugParam, body: jsonBody(InvokeFunctionBodySchema) },
  responses: {
    200: jsonResponse(InvokeFunctionResponseSchema, 'The Function ran; its response is in `response`'),
    ...errorResponses(400, 401, 403, 404, 413, 429, 502),
  },
});

const getFunctionRoute = createRoute({
  method: 'get',
  path: '/functions/{functionId}',
  tags: ['Functions'],
  summary: 'Get an owned Function',
  security: securityFor('svc.functions.read'),
  request: { params: FunctionIdParam },
  responses: { 200: jsonResponse(FunctionResponseSchema, 'The Function'), ...errorResponses(401, 403, 404, 429) },
});

const deleteFunctionRoute = createRoute({
  method: 'delete',
  path: '/functions/{functionId}',
  tags: ['Functions'],
  summary: 'Delete an owned Function',
  description: 'Removes the Function, its secrets and every caller’s SVC_MEMORY; the slug becomes free.',
  security: securityFor('svc.functions.write'),
  request: { params: FunctionIdParam },
  responses: { 200: jsonResponse(DeleteFunctionResponseSchema, 'Deleted'), ...errorResponses(401, 403, 404, 429) },
});

const replaceDraftRoute = createRoute({
  method: 'put',
  path: '/functions/{functionId}/draft',
  tags: ['Functions'],
  summary: 'Replace draft code',
  description: 'Refused with 409 `function_has_secrets` when the Function has configured secrets (change it in the dashboard).',
  security: securityFor('svc.functions.write'),
  request: { params: FunctionIdParam, body: jsonBody(ReplaceDraftBodySchema) },
  responses: { 200: jsonResponse(FunctionResponseSchema, 'Draft replaced'), ...errorResponses(400, 401, 403, 404, 409, 413, 429) },
});

const publishFunctionRoute = createRoute({
  method: 'post',
  path: '/functions/{functionId}/publish',
  tags: ['Functions'],
  summary: 'Publish the current draft (no body)',
  description: 'The draft becomes the live version that invoke runs. Refused with 409 `function_has_secrets` when the Function has configured secrets.',
  security: securityFor('svc.functions.write'),
  request: { params: FunctionIdParam },
  responses: { 200: jsonResponse(FunctionResponseSchema, 'Published'), ...errorResponses(401, 403, 404, 409, 429) },
});

const setAccessRoute = createRoute({
  method: 'put',
  path: '/functions/{functionId}/access',
  tags: ['Functions'],
  summary: 'Set svc-user access',
  description: 'allowUserInvoke: true lets other accounts’ personal keys (scope svc.functions.invoke) invoke the live version.',
  security: securityFor('svc.functions.write'),
  request: { params: FunctionIdParam, body: jsonBody(FunctionAccessBodySchema) },
  responses: { 200: jsonResponse(FunctionResponseSchema, 'Access set'), ...errorResponses(400, 401, 403, 404, 429) },
});

/** Account API: `/api/v1/functions…` (mounted under /api/v1). */
export function functionRoutes(deps: Deps) {
  const r = createApiRouter();
  const read = requireScope(deps, 'svc.functions.read');
  const write = requireScope(deps, 'svc.functions.write');
  const invoke = requireScope(deps, 'svc.functions.invoke');
  // Every :functionId is an id or the account's slug for it.
  const idOf = (c: Context<AppEnv>) => ownedFunctionId(deps.db, c.var.principal.accountId, c.req.param('functionId')!);
  r.openapi({ ...listFunctionsRoute, middleware: [read] as const }, async (c) => {
    const page = c.req.valid('query');
    const { functions, total } = await listOwnedFunctions(deps, c.var.principal.accountId, page);
    return c.json({ ok: true as const, functions, total, ...page }, 200);
  });
  r.openapi({ ...createFunctionRoute, middleware: [write] as const }, async (c) => {
    const fn = await createFunction(deps, c.var.principal.accountId, c.req.valid('json'));
    return c.json({ ok: true as const, function: fn }, 201);
  });
  r.openapi({ ...invokeFunctionRoute, middleware: [invoke, personalKeyOnly, invokeBodyLimit] as const }, async (c) => {
    const result = await invokeFunction(deps, c.var.principal, c.req.valid('param').slug, c.req.valid('json'));
    return c.json(result, 200);
  });
  r.openapi({ ...getFunctionRoute, middleware: [read] as const }, async (c) => {
    const row = await findOwnedFunction(deps.db, c.var.principal.accountId, c.req.valid('param').functionId);
    return c.json({ ok: true as const, function: await viewFunction(deps, row) }, 200);
  });
  r.openapi({ ...deleteFunctionRoute, middleware: [write] as const }, async (c) => {
    const deleted = await deleteFunction(deps, c.var.principal.accountId, await idOf(c));
    return c.json({ ok: true as const, deleted }, 200);
  });
  r.openapi({ ...replaceDraftRoute, middleware: [write] as const }, async (c) => {
    const fn = await replaceDraft(deps, c.var.principal.accountId, await idOf(c), c.req.valid('json').code);
    return c.json({ ok: true as const, function: fn }, 200);
  });
  r.openapi({ ...publishFunctionRoute, middleware: [write] as const }, async (c) => {
    const fn = await publishFunction(deps, c.var.principal.accountId, await idOf(c));
    return c.json({ ok: true as const, function: fn }, 200);
  });
  r.openapi({ ...setAccessRoute, middleware: [write] as const }, async (c) => {
    const fn = await setAllowUserInvoke(deps, c.var.principal.accountId, await idOf(c), c.req.valid('json').allowUserInvoke);
    return c.json({ ok: true as const, function: fn }, 200);
  });
  return r;
}
