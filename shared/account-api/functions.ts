import { z } from 'zod';

/** Function slugs are global (the invoke path names no account): lower-case letters, digits, inner hyphens. */
export const FUNCTION_SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Secret names as the function sees them: `SVC_SECRETS.NAME`. */
export const SECRET_NAME_PATTERN = /^[A-Z_][A-Z0-9_]{0,63}$/;

/** Invoke limits (spec §8). */
export const INVOKE_MAX_REQUEST_BYTES = 128 * 1024;
export const INVOKE_MAX_RESPONSE_BYTES = 256 * 1024;

/** Request headers a caller may forward to the function; anything else is refused with 400. */
export const FORWARDABLE_HEADERS = ['accept', 'accept-language', 'content-type', 'if-match', 'if-none-match', 'user-agent'] as const;

export const FunctionSlugSchema = z.string().trim().toLowerCase().regex(FUNCTION_SLUG_PATTERN, 'use 1–63 lower-case letters, digits and inner hyphens');

export const FunctionSchema = z
  .object({
    id: z.string().describe('Function identifier (functionId)'),
    name: z.string(),
    slug: z.string().describe('Global short name used in POST /api/v1/functions/invoke/{slug}'),
    code: z.string().describe('Source of the current draft'),
    draftVersion: z.number().int().describe('Bumped by every draft replace'),
    status: z
      .enum(['draft', 'live', 'cleanup_pending'])
      .describe('draft: never published; live: a published version answers invoke; cleanup_pending: being deleted'),
    liveVersion: z.number().int().nullable().describe('The draftVersion that is live, or null'),
    hasUnpublishedChanges: z.boolean().describe('True when the draft differs from the live version'),
    publishedAt: z.string().datetime().nullable(),
    allowUserInvoke: z
      .boolean()
      .describe(
        'svc-user access: other accounts’ personal keys may invoke the live version. Set on create; changed in the dashboard or with `svc function access`',
      ),
    secretNames: z.array(z.string()).describe('Names of configured secrets; values are never returned'),
    invokePath: z.string().describe('/api/v1/functions/invoke/{slug}'),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .meta({ id: 'Function' });

/** What a model needs to write a handler that runs the first time (docs/functions.md "The handler contract"). */
const FunctionCodeSchema = z
  .string()
  .min(1)
  .describe(
    'ES module: `export default async (request) => …`; request is {method, path, query (object), headers, body}; return {status, headers, body}, a string or a JSON value. ECMAScript built-ins only: no fetch, Request, Response, URL',
  );

export const CreateFunctionBodySchema = z
  .object({
    name: z.string().trim().min(1).max(100),
    slug: FunctionSlugSchema,
    code: FunctionCodeSchema,
    allowUserInvoke: z.boolean().default(false).describe('Allow other accounts’ personal keys to invoke the live version (default false)'),
  })
  .meta({ id: 'CreateFunctionRequest' });

/** svc-user access: whether other accounts' personal keys may invoke the live version. */
export const FunctionAccessBodySchema = z.object({ allowUserInvoke: z.boolean() }).meta({ id: 'FunctionAccessRequest' });

export const ReplaceDraftBodySchema = z.object({ code: FunctionCodeSchema }).meta({ id: 'ReplaceFunctionDraftRequest' });

export const FunctionResponseSchema = z.object({ ok: z.literal(true), function: FunctionSchema }).meta({ id: 'FunctionResponse' });

export const FunctionListQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe('Page size, 1–200 (default 50)'),
  offset: z.coerce.number().int().min(0).default(0),
});

export const FunctionListResponseSchema = z
  .object({ ok: z.literal(true), functions: z.array(FunctionSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .meta({ id: 'FunctionList' });

export const DeleteFunctionResponseSchema = z
  .object({ ok: z.literal(true), deleted: z.object({ id: z.string(), slug: z.string() }) })
  .meta({ id: 'DeleteFunctionResponse' });

const JsonValue: z.ZodType<unknown> = z.unknown();

export const InvokeFunctionBodySchema = z
  .object({
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']),
    path: z.string().max(2048).regex(/^\//, 'must start with /').describe('Relative path the function sees, starting with /'),
    query: z.string().max(8192).optional().describe('Query string without or with the leading ?, e.g. "a=1&b=2"'),
    headers: z
      .record(z.string(), z.string().max(1024))
      .optional()
      .describe(`Forwarded request headers; only ${FORWARDABLE_HEADERS.join(', ')} (case-insensitive)`),
    body: JsonValue.optional().describe('JSON value or text handed to the function as request.body'),
  })
  .meta({ id: 'InvokeFunctionRequest' });

export const InvokeFunctionResponseSchema = z
  .object({
    ok: z.literal(true),
    function: z.object({ id: z.string(), slug: z.string(), version: z.number().int() }),
    response: z.object({
      status: z.number().int().describe('Status the function chose (default 200)'),
      headers: z.record(z.string(), z.string()).describe('Headers the function returned'),
      bodyType: z.enum(['json', 'text', 'empty']).describe('json: body is the returned JSON value; text: body is a string; empty: no body'),
      body: z.unknown().describe('The returned body; text when truncated'),
      truncated: z.boolean().describe('True when the content exceeded 256 KiB and body holds its first 256 KiB as text'),
      bytes: z.number().int().describe('Full size of the content in UTF-8 bytes (before truncation)'),
    }),
    durationMs: z.number().describe('Wall time of the invocation'),
  })
  .meta({ id: 'InvokeFunctionResponse' });

export type FunctionView = z.infer<typeof FunctionSchema>;
export type CreateFunctionBody = z.infer<typeof CreateFunctionBodySchema>;
export type InvokeFunctionBody = z.infer<typeof InvokeFunctionBodySchema>;
export type InvokeFunctionResponse = z.infer<typeof InvokeFunctionResponseSchema>;
