import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { CreateFunctionBodySchema, InvokeFunctionBodySchema } from '../../shared/account-api/functions.js';
import { slugFromName } from '../../shared/slug.js';
import { ACCOUNT_OPERATIONS, READ_FILES_BUDGET, type AccountOperation } from '../../shared/account-api/operations.js';
import { PublishSiteBodySchema } from '../../shared/account-api/sites.js';
import type { McpContext } from '../context.js';
import type { ServerContext as Extra } from '@modelcontextprotocol/server';
import { addTool, addUnavailableTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { madeTableNextStep, type MadeTable } from '../table-next-step.js';
import { describeFailure, readAnswer, type ServiceAnswer, type ServiceFailure } from '../service-answer.js';
import { answerInToolWords, asToolArgSchema } from '../vocabulary.js';
import { continueAsTask } from '../tasks/extension.js';

/** Tool argument ↔ Account API field, in the tools' vocabulary (mcp/vocabulary.ts). */
const ARG_OF: Record<string, string> = { siteId: 'appId' };
// Publishing names the new app's slug `slug`; in the tools' vocabulary that is appName. (A Table's
// `slug` on account_create_table stays `slug`: it names the Table, not the app.)
// Invoking names the Function by `slug` in its path; the tools name a Function `functionId` (its id or
// its slug) in every tool, this one too.
const argOf = (op: AccountOperation, field: string) => {
  if (op.path === '/sites' && op.method === 'POST' && field === 'slug') return 'appName';
  if (op.tool === 'function_invoke' && field === 'slug') return 'functionId';
  return ARG_OF[field] ?? field;
};

/**
 * Arguments a tool takes more loosely than the HTTP API, so that a model's first guess works: the
 * tool's schema, how its value becomes the API's, and (`absent`) what the API gets when the call
 * leaves it out. The service stays strict (spec: `path` is required, `query` is a string, a Function
 * needs a name).
 */
interface LooserArg {
  /** The tool's schema of the argument (default: the API's). */
  schema?: z.core.$ZodType;
  toApi?: (value: unknown, args: Record<string, unknown>, ctx: McpContext) => unknown;
  absent?: (args: Record<string, unknown>) => unknown;
}

/** index.html given among a publish's files (as deploy_site takes it), which the API takes as html. */
function indexHtmlOf(files: unknown): { content: string; encoding?: string } | undefined {
  return Array.isArray(files) ? files.find((f: { path?: unknown }) => f?.path === 'index.html') : undefined;
}

const LOOSER_ARGS: Record<string, Record<string, LooserArg>> = {
  account_publish_app: {
    html: {
      schema: PublishSiteBodySchema.shape.html.optional().describe('Complete HTML document served as index.html (or index.html in files)'),
      absent: (args) => {
        const index = indexHtmlOf(args.files);
        if (!index) throw new ToolFailure('account_publish_app needs html (the HTML document served as index.html), or index.html in files. Nothing was done.');
        return index.encoding === 'base64' ? Buffer.from(index.content, 'base64').toString('utf8') : index.content;
      },
    },
    files: {
      toApi: (files, args) => (args.html === undefined && Array.isArray(files) ? files.filter((f) => f !== indexHtmlOf(files)) : files),
    },
  },
  function_create: {
    name: { schema: CreateFunctionBodySchema.shape.name.optional().describe('Display name (default: the slug)'), absent: (args) => args.slug },
    slug: {
      schema: CreateFunctionBodySchema.shape.slug.optional().describe('URL name, unique on the service (default: from the name)'),
      absent: (args) => (typeof args.name === 'string' ? slugFromName(args.name, 'function') : undefined),
    },
  },
  function_invoke: {
    slug: { toApi: (value, _args, ctx) => slugOfFunction(ctx, value as string) },
    method: { schema: InvokeFunctionBodySchema.shape.method.default('GET') },
    path: { schema: InvokeFunctionBodySchema.shape.path.default('/').describe('Path the function sees') },
    query: {
      schema: z
        .union([z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), InvokeFunctionBodySchema.shape.query.unwrap()])
        .optional()
        .describe('{"a":"1"} or "a=1&b=2"'),
      toApi: (value) =>
        typeof value === 'object' && value !== null
          ? new URLSearchParams(Object.entries(value).map(([k, v]): [string, string] => [k, String(v)])).toString()
          : value,
    },
  },
};

/** The slug a Function is invoked by: given as it is, or (an id, `fn_…`: slugs have no `_`) its Function's. */
async function slugOfFunction(ctx: McpContext, functionId: string): Promise<string> {
  if (!functionId.startsWith('fn_')) return functionId;
  try {
    return ((await callAccountTool(ctx, 'function_get', { functionId })).function as { slug: string }).slug;
  } catch (e) {
    throw e instanceof ToolFailure ? new ToolFailure(e.message.replace(/^function_get failed/, 'function_invoke failed')) : e;
  }
}

/** Whether the caller's own Function of that slug has no live version (the invoke route's 404 does not tell it from a stranger's). */
async function isOwnDraft(ctx: McpContext, slug: string): Promise<boolean> {
  try {
    return ((await callAccountTool(ctx, 'function_get', { functionId: slug })).function as { liveVersion?: unknown }).liveVersion === null;
  } catch {
    return false; // not the caller's, or a credential that may not read it: the route's own answer stands
  }
}

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
        hit.input[argOf(op, field)] = LOOSER_ARGS[op.tool]?.[field]?.schema ?? asToolArgSchema(argOf(op, field), schema);
        hit.fields.set(argOf(op, field), [where, field]);
      }
    }
    shapeCache.set(op.tool, hit);
  }
  return hit;
}

/**
 * An account's apps and a wallet's are apart (the caller that created an app owns it): the account
 * tools do not see what the wallet's paid tools created.
 */
const APP_NOT_IN_ACCOUNT =
  "account_list_apps lists the apps of this account; an app created with the wallet (list_apps lists those) belongs to the wallet and is managed with the wallet's tools (publish_app, create_table_api…).";

/**
 * What code written for Node or the browser meets in a Function's sandbox: a name it does not have
 * (`module.exports`, `require`, `fetch`…), or a second argument to answer through (Express's `res`).
 * Either failure is answered with the handler's contract (docs/functions.md).
 */
const NOT_IN_THE_SANDBOX = /'(fetch|Request|Response|Headers|URL|URLSearchParams|module|exports|require|process|Buffer|setTimeout)' is not defined/;
const NO_RES_TO_CALL = /cannot read property '(json|send|status|end|setHeader|writeHead)' of undefined/;
const HANDLER_CONTRACT =
  'A function is an ES module in a sandbox with the ECMAScript built-ins only (no module/require, no fetch, no timers): `export default async (request) => ({ status: 200, body: … })`, where request is a plain {method, path, query (an object), headers, body} and the return is {status, headers, body}, a string or a JSON value (there is no `res` to call).';

function nextStep(op: AccountOperation, status: number, f: ServiceFailure): string {
  const { code, reason, what } = f;
  if (code === 'insufficient_scope') return `Your sign-in lacks the scope ${op.scope}: sign in again granting it (or use a personal key that has it).`;
  if (status === 401) return 'The credential is missing, expired or revoked: sign in again (svc-mcp: ask the user for a valid SVC_API_KEY).';
  if (code === 'function_failed' && reason === 'sandbox_error') return 'The sandbox running the function failed, not its code: call again.';
  if (code === 'function_failed' && (NOT_IN_THE_SANDBOX.test(what) || NO_RES_TO_CALL.test(what)))
    return `${HANDLER_CONTRACT} Change the code (function_update_draft, then function_publish) and invoke again.`;
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
    return `${op.tool} acts as an account: ask the user to start ${ctx.config.program} with SVC_API_KEY=svc_pat_… (a personal key of the account) and the "${op.toolset}" toolset in SVC_TOOLSETS.`;
  if (ctx.config.readOnly && !op.readOnly)
    return `${op.tool} changes the account, and this server runs read-only (SVC_READ_ONLY): ask the user to start ${ctx.config.program} without SVC_READ_ONLY to use it.`;
  return null;
}

/** Whether this session lists the Account API tool `tool` (or can list it: a dynamic session), and may use it. */
export function accountToolListed(ctx: McpContext, tool: string): boolean {
  const op = ACCOUNT_OPERATIONS.find((o) => o.tool === tool);
  return op !== undefined && (ctx.toolsets.dynamic || ctx.toolsets.enabled.has(op.toolset)) && whyNotAllowed(ctx, op) === null;
}

/**
 * What to say where wallet tool `tool` is not listed, of the account's tool that does the same
 * (`instead`): that it does so, free, when this session lists it; on the signed-in endpoint, when
 * only a scope is missing, which one (the toolset's answer would send the model the wrong way).
 */
export function accountToolNote(ctx: McpContext, instead: string): string | undefined {
  if (accountToolListed(ctx, instead)) return `${instead} does this for the account, free.`;
  const op = ACCOUNT_OPERATIONS.find((o) => o.tool === instead);
  const signedIn = ctx.hosted && ctx.hosted.credentialKind !== 'wallet';
  if (!op || !signedIn || !ctx.toolsets.enabled.has(op.toolset)) return undefined;
  const why = whyNotAllowed(ctx, op);
  return why ? `${instead} would do this for the account, free, but ${why}` : undefined;
}

/**
 * A function's code is what the model sent: function_get answers it; the other function tools leave
 * it out of their function objects (a list of ten functions would otherwise carry ten sources).
 */
function withoutEchoedCode(op: AccountOperation, body: Record<string, unknown>): Record<string, unknown> {
  if (op.toolset !== 'functions' || op.tool === 'function_get') return body;
  const drop = (f: unknown) => {
    if (typeof f !== 'object' || f === null || !('code' in f)) return f;
    const { code: _code, ...rest } = f as Record<string, unknown>;
    return rest;
  };
  return {
    ...body,
    ...('function' in body ? { function: drop(body.function) } : {}),
    ...(Array.isArray(body.functions) ? { functions: body.functions.map(drop) } : {}),
  };
}

interface FileContent {
  path: string;
  content?: string;
  [k: string]: unknown;
}

/**
 * The service answers up to 5 MiB of text, far more than a model's context holds: the files' content
 * is kept while it fits READ_FILES_BUDGET characters, the files past it are listed (path, type, size)
 * without it, and the summary names them to ask for by `path`. A single file over the budget alone
 * comes cut at the budget (`contentCut: true`).
 */
function withinReadBudget(body: Record<string, unknown>): { body: Record<string, unknown>; summary?: string } {
  if (!Array.isArray(body.files)) return { body };
  let used = 0;
  const leftOut: string[] = [];
  const files = (body.files as FileContent[]).map((f) => {
    const size = f.content?.length ?? 0;
    if (used + size <= READ_FILES_BUDGET) {
      used += size;
      return f;
    }
    if (used === 0) {
      used = READ_FILES_BUDGET;
      return { ...f, content: f.content!.slice(0, READ_FILES_BUDGET), contentCut: true };
    }
    leftOut.push(f.path);
    const { content: _content, ...listed } = f;
    return listed;
  });
  const cut = files.find((f) => f.contentCut);
  if (!leftOut.length && !cut) return { body };
  const summary = [
    cut ? `${cut.path} is cut at its first ${READ_FILES_BUDGET.toLocaleString('en')} characters.` : '',
    leftOut.length
      ? `${leftOut.length} files are listed without content (over ${READ_FILES_BUDGET.toLocaleString('en')} characters in one answer): name a few in path to read them (${leftOut.slice(0, 5).join(', ')}${leftOut.length > 5 ? ', …' : ''}).`
      : '',
  ]
    .filter(Boolean)
    .join(' ');
  return { body: { ...body, files }, summary };
}

/** What the model is given of an answer: the tools' words, no echoed code, file contents within budget, how to reach a Table made. */
function forTheModel(op: AccountOperation, answer: Record<string, unknown>): { body: Record<string, unknown>; summary?: string } {
  const body = withoutEchoedCode(op, answerInToolWords(answer));
  if (op.tool === 'account_read_app_files') return withinReadBudget(body);
  const made = madeTableNextStep((body.table ?? body.dataset) as MadeTable | undefined, false);
  return made ? { body, summary: `${op.tool} done.${made}` } : { body };
}

async function callOperation(
  ctx: McpContext,
  op: AccountOperation,
  args: Record<string, unknown>,
): Promise<{ body: Record<string, unknown>; summary?: string }> {
  const { fields } = shapeOf(op);
  const parts = { params: {} as Record<string, unknown>, query: new URLSearchParams(), body: {} as Record<string, unknown> };
  for (const [arg, given] of Object.entries(args)) {
    const [where, field] = fields.get(arg) ?? ['body', arg];
    const toApi = LOOSER_ARGS[op.tool]?.[field]?.toApi;
    const value = toApi ? await toApi(given, args, ctx) : given;
    if (where === 'params') parts.params[field] = value;
    else if (where === 'query') for (const v of Array.isArray(value) ? value : [value]) parts.query.append(field, String(v));
    else parts.body[field] = value;
  }
  for (const [field, loose] of Object.entries(LOOSER_ARGS[op.tool] ?? {}))
    if (loose.absent && !(argOf(op, field) in args)) parts.body[field] = loose.absent(args);
  const path = op.path.replace(/\{(\w+)\}/g, (_m, k: string) => {
    const v = parts.params[k];
    if (typeof v !== 'string' || !v) throw new ToolFailure(`${op.tool} needs ${argOf(op, k)}.`);
    return encodeURIComponent(v);
  });
  const qs = parts.query.toString();
  const headers: Record<string, string> = {};
  if (!ctx.hosted && ctx.config.apiKey) headers.authorization = `Bearer ${ctx.config.apiKey}`;
  if (op.body) headers['content-type'] = 'application/json';
  const { res, answer } = await requestAccountApi(
    ctx,
    `/api/v1${path}${qs ? `?${qs}` : ''}`,
    { method: op.method, headers, body: op.body ? JSON.stringify(parts.body) : undefined },
    (reason) => `${op.tool} failed: the service did not answer (${reason}). Nothing was changed; retry later.`,
  );
  if (!res.ok) {
    const f = describeFailure(res, answer);
    const app = parts.params.siteId;
    if (typeof app === 'string' && f.missingSite === app)
      throw new ToolFailure(`${op.tool} failed: app ${app} not found in this account ${f.tag}. ${APP_NOT_IN_ACCOUNT}`, { status: 404, code: f.code });
    const slug = parts.params.slug;
    if (op.tool === 'function_invoke' && res.status === 404 && typeof slug === 'string' && (await isOwnDraft(ctx, slug)))
      throw new ToolFailure(`function_invoke failed: ${slug} is a draft, never published ${f.tag}. function_publish makes it live; then invoke it again.`, {
        status: 404,
        code: f.code,
      });
    throw new ToolFailure(`${op.tool} failed: ${f.what} ${f.tag}. ${nextStep(op, res.status, f)}`, { status: res.status, code: f.code });
  }
  return forTheModel(op, answer.json);
}

/**
 * Whether the composite tools (deploy_site, upload_dataset) act for the account, free, rather than
 * paying: svc-mcp with a personal key (SVC_API_KEY) and no wallet. With a wallet they pay, as they
 * always did (what they make is the wallet's).
 */
export function composesForAccount(ctx: McpContext): boolean {
  return !ctx.hosted && !ctx.upstream && ctx.wallet.address === null && ctx.config.apiKey !== undefined;
}

/**
 * A POST to an Account API route that is no tool (the composites' upload steps: upload URLs, their
 * completion), as the account of SVC_API_KEY; a refusal is a ToolFailure with the service's words.
 */
export async function postToAccountApi(ctx: McpContext, path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { res, answer } = await requestAccountApi(
    ctx,
    `/api/v1${path}`,
    { method: 'POST', headers: { authorization: `Bearer ${ctx.config.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) },
    (reason) => `the service did not answer (${reason}).`,
  );
  if (res.ok) return answer.json;
  const f = describeFailure(res, answer);
  throw new ToolFailure(`${f.what} ${f.tag}.`);
}

/** How long a tool waits for the Account API's answer. */
const ACCOUNT_API_TIMEOUT_MS = 60_000;

/**
 * One request to the service's Account API and its answer read. A service that refuses the
 * connection, or has not answered whole within ACCOUNT_API_TIMEOUT_MS, is a ToolFailure in
 * `didNotAnswer`'s words, not the fetch's error.
 */
async function requestAccountApi(
  ctx: McpContext,
  path: string,
  init: { method: string; headers: Record<string, string>; body?: string },
  didNotAnswer: (reason: string) => string,
): Promise<{ res: Response; answer: ServiceAnswer }> {
  try {
    const res = await ctx.fetch(`${ctx.config.serviceUrl}${path}`, {
      ...init,
      headers: { accept: 'application/json', ...init.headers },
      signal: AbortSignal.timeout(ACCOUNT_API_TIMEOUT_MS),
    });
    return { res, answer: await readAnswer(res) };
  } catch (e) {
    throw new ToolFailure(didNotAnswer((e as Error).message));
  }
}

/** One Account API operation, by its tool's name and with the tool's arguments; the answer in the tools' words. */
export async function callAccountTool(ctx: McpContext, tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const op = ACCOUNT_OPERATIONS.find((o) => o.tool === tool);
  if (!op) throw new Error(`no Account API operation ${tool}`);
  return (await callOperation(ctx, op, args)).body;
}

/**
 * The tools that destroy what cannot be brought back, and the question put to the person before they
 * act (mcp/ask-person.ts), naming what will be lost, as the service describes it now.
 */
const CONFIRMED: Record<string, (ctx: McpContext, args: Record<string, unknown>) => Promise<string>> = {
  account_delete_app: async (ctx, args) => {
    const app = await describe(ctx, `/api/v1/sites/${encodeURIComponent(String(args.appId ?? args.siteId))}`);
    const name = app?.name ?? args.appId ?? args.siteId;
    return `Delete the app ${String(name)}${app?.url ? ` (${app.url})` : ''} with all its files, Tables and datasets? This cannot be undone.`;
  },
  function_delete: async (ctx, args) => {
    const fn = await describe(ctx, `/api/v1/functions/${encodeURIComponent(String(args.functionId))}`);
    return `Delete the function ${String(fn?.slug ?? fn?.name ?? args.functionId)} with its secrets and memory? Its slug becomes free. This cannot be undone.`;
  },
  account_rollback_app: async (ctx, args) => {
    const app = await describe(ctx, `/api/v1/sites/${encodeURIComponent(String(args.appId ?? args.siteId))}`);
    return `Roll the app ${String(app?.name ?? args.appId)} back to version ${String(args.version)}? What it serves now stops being served at once.`;
  },
};

/** The Account API tools whose call may become a task, and what the task says it does. */
const RUNS_LONG: Record<string, string> = {
  account_create_dataset: 'converting the data file into a dataset',
  account_publish_app: 'publishing the app',
};

/** The form of a confirmation: one box the person ticks (accepting with it unticked is declining). */
const CONFIRM_FORM = { type: 'object' as const, properties: { confirm: { type: 'boolean' as const, title: 'Yes, do it' } }, required: ['confirm'] };

/** A resource of the account as the service shows it (name, url…), or undefined when it cannot be read. */
async function describe(ctx: McpContext, path: string): Promise<Record<string, string> | undefined> {
  try {
    const res = await ctx.fetch(`${ctx.config.serviceUrl}${path}`);
    if (!res.ok) return undefined;
    const body = (await res.json()) as Record<string, unknown>;
    const inner = (body.site ?? body.function ?? body) as Record<string, string>;
    return inner;
  } catch {
    return undefined;
  }
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
      },
      (args: Record<string, unknown>, extra: Extra) =>
        guarded(async () => {
          const confirmation = CONFIRMED[op.tool];
          if (confirmation && ctx.askPerson) {
            const asked = await ctx.askPerson.ask(
              extra,
              { tool: op.tool, args, caller: ctx.hosted?.credential ?? '' },
              { message: await confirmation(ctx, args), requestedSchema: CONFIRM_FORM },
            );
            if (asked.kind === 'ask') return asked.result as never;
            if (asked.kind === 'refused') throw new ToolFailure(`${op.tool}: ${asked.why}. Nothing was done; call ${op.tool} again to be asked again.`);
            if (asked.kind === 'accepted' && asked.content.confirm !== true) asked.kind = 'declined' as never;
            if (asked.kind === 'declined' || asked.kind === 'cancelled')
              return okResult(
                { done: false, answer: asked.kind },
                `${op.tool}: the person ${asked.kind === 'declined' ? 'declined' : 'did not answer'}. Nothing was done.`,
              );
          }
          // A conversion or a publish of many files may take a while: the call may run as a task (mcp/tasks/extension.ts).
          if (RUNS_LONG[op.tool]) await continueAsTask(RUNS_LONG[op.tool]!);
          const { body, summary } = await callOperation(ctx, op, args);
          return okResult(body, summary);
        }),
      op.toolset,
    );
  }
}
