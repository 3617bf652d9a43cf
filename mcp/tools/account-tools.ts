import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { z } from 'zod';
import { ACCOUNT_OPERATIONS, type AccountOperation } from '../../shared/account-api/operations.js';
import type { McpContext } from '../context.js';
import { addTool, addUnavailableTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { describeFailure, readAnswer } from '../service-answer.js';
import { accountAnswerAsApps, asToolArgSchema } from '../vocabulary.js';

/** Tool argument ↔ Account API field, in the tools' vocabulary (mcp/vocabulary.ts). */
const ARG_OF: Record<string, string> = { siteId: 'appId' };
// Publishing names the new app's slug `slug`; in the tools' vocabulary that is appName. (A Table's
// `slug` on account_create_table stays `slug`: it names the Table, not the app.)
const argOf = (op: AccountOperation, field: string) =>
  op.path === '/sites' && op.method === 'POST' && field === 'slug' ? 'appName' : (ARG_OF[field] ?? field);

interface AccountToolShape {
  input: Record<string, z.core.$ZodType>;
  /** Tool argument → [where, Account API name]. */
  fields: Map<string, ['params' | 'query' | 'body', string]>;
}
const shapeCache = new Map<string, AccountToolShape>();

function shapeOf(op: AccountOperation): AccountToolShape {
  let hit = shapeCache.get(op.tool);
  if (!hit) {
    hit = { input: {}, fields: new Map() };
    for (const where of ['params', 'query', 'body'] as const) {
      for (const [field, schema] of Object.entries((op[where]?.shape ?? {}) as Record<string, z.core.$ZodType>)) {
        hit.input[argOf(op, field)] = asToolArgSchema(argOf(op, field), schema);
        hit.fields.set(argOf(op, field), [where, field]);
      }
    }
    shapeCache.set(op.tool, hit);
  }
  return hit;
}

function nextStep(op: AccountOperation, status: number, code: string | undefined, reason: string | undefined): string {
  if (code === 'insufficient_scope') return `Your sign-in lacks the scope ${op.scope}: sign in again granting it (or use a personal key that has it).`;
  if (status === 401) return 'The credential is missing, expired or revoked: sign in again (or set SVC_API_KEY).';
  if (code === 'function_failed' && reason === 'sandbox_error') return 'The sandbox running the function failed, not its code: call again.';
  if (code === 'function_failed')
    return "The function's own code failed or went over its limits, so the same call fails again: change the code (function_update_draft, then function_publish) and invoke again.";
  if (status === 404 && op.tool === 'function_invoke')
    return "function_list lists your functions with their status: a function answers only once published (function_publish), and another account's only when it allows user invoke.";
  if (status === 404) return op.toolset === 'functions' ? 'Check the id (function_list lists them).' : 'Check the id (account_list_apps lists your apps).';
  if (status === 400) return 'Fix the arguments named above and call again.';
  if (status === 409) return 'It conflicts with what exists: pick another name or change the existing one.';
  if (status === 429) return 'A rate limit was reached; wait a minute and retry.';
  return 'Retry later; if it keeps failing, tell the user.';
}

/**
 * Why this session may not use `op` (what to do instead), or null when it may: hosted callers by
 * their credential and its scopes; svc-mcp when SVC_API_KEY is set (and, read-only, for reads).
 */
function whyNotAllowed(ctx: McpContext, op: AccountOperation): string | null {
  const hosted = ctx.hosted;
  if (hosted?.credentialKind === 'wallet')
    return `${op.tool} acts as an account, and /mcp/x402 has none (the wallet that pays is the caller): connect to ${ctx.config.serviceUrl}/mcp instead, signing in with OAuth or a personal key (svc_pat_…).`;
  if (hosted && !hosted.scopes.includes(op.scope))
    return `${op.tool} needs the scope ${op.scope}, which this credential was not granted: sign in again granting it, or connect with a personal key that has it.`;
  if (hosted && op.personalKeyOnly && hosted.credentialKind === 'oauth_token')
    return `${op.tool} takes a personal key (svc_pat_…), not an OAuth sign-in: connect to ${ctx.config.serviceUrl}/mcp with a personal key that has the scope ${op.scope}.`;
  if (hosted) return null;
  if (!ctx.config.apiKey)
    return `${op.tool} acts as an account: start svc-mcp with SVC_API_KEY=svc_pat_… (a personal key of the account) and the "${op.toolset}" toolset in SVC_TOOLSETS.`;
  if (ctx.config.readOnly && !op.readOnly)
    return `${op.tool} changes the account, and this svc-mcp runs read-only (SVC_READ_ONLY): start it without SVC_READ_ONLY to use it.`;
  return null;
}

/** Whether this session has the Account API tool `tool` (its toolset aside). */
export function hasAccountTool(ctx: McpContext, tool: string): boolean {
  const op = ACCOUNT_OPERATIONS.find((o) => o.tool === tool);
  return op !== undefined && whyNotAllowed(ctx, op) === null;
}

async function callOperation(ctx: McpContext, op: AccountOperation, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { fields } = shapeOf(op);
  const parts = { params: {} as Record<string, unknown>, query: new URLSearchParams(), body: {} as Record<string, unknown> };
  for (const [arg, value] of Object.entries(args)) {
    const [where, field] = fields.get(arg) ?? ['body', arg];
    if (where === 'params') parts.params[field] = value;
    else if (where === 'query') for (const v of Array.isArray(value) ? value : [value]) parts.query.append(field, String(v));
    else parts.body[field] = value;
  }
  const path = op.path.replace(/\{(\w+)\}/g, (_m, k: string) => {
    const v = parts.params[k];
    if (typeof v !== 'string' || !v) throw new ToolFailure(`${op.tool} needs ${argOf(op, k)}.`);
    return encodeURIComponent(v);
  });
  const qs = parts.query.toString();
  const headers: Record<string, string> = { accept: 'application/json' };
  if (!ctx.hosted && ctx.config.apiKey) headers.authorization = `Bearer ${ctx.config.apiKey}`;
  if (op.body) headers['content-type'] = 'application/json';
  const url = `${ctx.config.serviceUrl}/api/v1${path}${qs ? `?${qs}` : ''}`;
  let res: Response;
  try {
    res = await ctx.fetch(url, { method: op.method, headers, body: op.body ? JSON.stringify(parts.body) : undefined, signal: AbortSignal.timeout(60_000) });
  } catch (e) {
    throw new ToolFailure(`${op.tool} failed: the service did not answer (${(e as Error).message}). Nothing was changed; retry later.`);
  }
  const answer = await readAnswer(res);
  if (!res.ok) {
    const f = describeFailure(res, answer);
    throw new ToolFailure(`${op.tool} failed: ${f.what} ${f.tag}. ${nextStep(op, res.status, f.code, f.reason)}`, { status: res.status, code: f.code });
  }
  return accountAnswerAsApps(answer.json);
}

/**
 * One tool per Account API operation (shared/account-api/operations.ts), generated from the API's own
 * request schemas and acting as the caller: the signed-in account on the hosted endpoint (only the
 * operations its scopes allow are listed), or SVC_API_KEY's account in svc-mcp.
 */
export function registerAccountTools(server: McpServer, ctx: McpContext): void {
  for (const op of ACCOUNT_OPERATIONS) {
    const refusal = whyNotAllowed(ctx, op);
    if (refusal) {
      addUnavailableTool(server, op.tool, refusal);
      continue;
    }
    addTool(
      server,
      ctx,
      op.tool,
      {
        description: `${op.description} Needs scope ${op.scope}. Free.`,
        inputSchema: shapeOf(op).input,
        annotations: { readOnlyHint: op.readOnly, destructiveHint: op.destructive, idempotentHint: op.idempotent, openWorldHint: true },
      },
      (args: Record<string, unknown>) => guarded(async () => okResult(await callOperation(ctx, op, args))),
      op.toolset,
    );
  }
}
