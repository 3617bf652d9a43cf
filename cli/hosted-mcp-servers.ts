import type { McpServer } from '@modelcontextprotocol/server';
import type { Context, Hono } from 'hono';
import { PersonAsker, type UsedRequestStates } from '../mcp/ask-person.js';
import { loadMcpConfig } from '../mcp/config.js';
import { getOrCreateSecret } from '../service/db/settings.js';
import { siwxNonces } from '../service/db/schema/index.js';
import { taskStoreInDb } from '../service/mcp-tasks/task-store.js';
import type { HostedCaller, McpContext } from '../mcp/context.js';
import { buildMcpServer, createMcpContext } from '../mcp/server.js';
import { McpServerPool } from '../mcp/stateless.js';
import { tracedFetch } from '../mcp/trace-context.js';
import { parseToolsets, type Toolset } from '../mcp/toolsets.js';
import { mcpGatewayEnv } from '../service/auth/resources.js';
import { callerAddressEnv, writerAddress } from '../service/http/client-ip.js';
import type { Deps } from '../service/deps.js';
import { mcpDiscoveryOf } from '../service/payments/bazaar.js';
import { paidAcceptsOf } from '../service/payments/payment-required.js';
import { AppError } from '../service/kernel/app-error.js';
import type { AppEnv } from '../service/kernel/request-env.js';

// The MCP servers behind the hosted endpoints (cli/hosted-mcp.ts), loaded with the MCP SDK when the
// first POST arrives: a service that nobody reaches over MCP never reads them.

/** Kinds of caller (toolsets × scopes) whose idle servers are kept. */
const MAX_POOLS = 32;

/** The caller a POST to /mcp signed in: its Authorization header, and the env its in-process calls carry. */
export interface SignedIn {
  authorization: string;
  env: ReturnType<typeof mcpGatewayEnv>;
}

/** The pools of MCP servers behind the hosted endpoints, one pool per kind of caller, and the in-process fetch their tools use. */
export class HostedMcp {
  readonly #deps: Deps;
  readonly #app: Hono<AppEnv>;
  /** In process, marked as coming through this endpoint (tokens bound to {base}/mcp are accepted there only), with no caller signed in. */
  readonly #inProcess: typeof fetch;
  /**
   * Built on the first request, not at mount: the first in-process request builds Hono's matcher,
   * after which no route can be added.
   */
  #shared: Promise<McpContext> | undefined;
  readonly #contexts = new WeakMap<McpServer, McpContext>();
  readonly #pools = new Map<string, McpServerPool>();

  /** How the local-only tools' refusals say to run svc-mcp against this service. */
  readonly #svcMcpCommand: string;

  constructor(app: Hono<AppEnv>, deps: Deps, svcMcpCommand: string) {
    this.#deps = deps;
    this.#app = app;
    this.#svcMcpCommand = svcMcpCommand;
    this.#inProcess = this.#inProcessWith(mcpGatewayEnv());
  }

  #inProcessWith(env: Record<symbol, unknown>): typeof fetch {
    return ((input: string | URL | Request, init?: RequestInit) =>
      this.#app.request(input instanceof Request ? input : String(input), init, env)) as typeof fetch;
  }

  /** Answers one POST for a caller: a pooled server of the caller's kind, given this caller's credential. */
  async answer(c: Context<AppEnv>, caller: HostedCaller, signedIn: SignedIn | undefined, defaults: readonly Toolset[]): Promise<Response> {
    const toolsets = toolsetsOf(c.req.query('toolsets'), defaults);
    const hosted: HostedCaller = { ...caller, x402Errors: x402ErrorsOf(c.req.query('x402_errors')) };
    // The tool's calls are this caller's: its address goes with them (read-your-writes, db/read-pools.ts).
    const forward = this.#forwarder(signedIn, writerAddress(c, this.#deps.config.trustProxy));
    // Operator variables (wallet key, API key, write key) must never reach a remote caller: the
    // config is built from nothing but the service's address. Prices are read once, in process.
    this.#shared ??= this.#sharedContext();
    const common = await this.#shared;
    // Servers are reused by callers whose tools are the same (toolsets, scopes, kind of credential);
    // each request hands its server the caller's credential.
    const key = `${[...toolsets.enabled].sort().join(',')}|${[...hosted.scopes].sort().join(' ')}|${hosted.credentialKind}`;
    const pool = this.#poolFor(key, () => {
      const ctx: McpContext = {
        ...common,
        fetch: forward,
        toolsets,
        hosted,
        svcMcpCommand: this.#svcMcpCommand,
        paymentDiscovery: mcpDiscoveryOf,
        paymentAccepts: (action) => paidAcceptsOf(this.#deps.config, action),
      };
      // Stateless: a tools/list comes without the client's capabilities, so the tools' views are always named.
      const server = buildMcpServer(ctx, { views: 'always' });
      this.#contexts.set(server, ctx);
      return server;
    });
    return pool.handle(c.req.raw, (server) => Object.assign(this.#contexts.get(server)!, { fetch: forward, hosted }));
  }

  /** What every caller's servers share: prices, the asker that confirms destructive tools (mcp/ask-person.ts), where tasks are kept. */
  async #sharedContext(): Promise<McpContext> {
    const ctx = await createMcpContext(loadMcpConfig({ SVC_URL: this.#deps.config.baseUrl }), { fetch: this.#inProcess });
    const db = this.#deps.db;
    const key = await getOrCreateSecret(db, 'mcp-request-state');
    // A used confirmation's id, kept with its expiry where every node sees it: the single-use nonce
    // table of sign-in proofs (pruned past expiry), under a prefix of its own.
    const used: UsedRequestStates = {
      async claim(id, expiresAt) {
        const claimed = await db
          .insert(siwxNonces)
          .values({ nonce: `mcp-ask:${id}`, address: 'mcp', expiresAt })
          .onConflictDoNothing()
          .returning({ nonce: siwxNonces.nonce });
        return claimed.length === 1;
      },
    };
    // Tasks in the database: any node answers for a task another node runs (mcp/tasks/extension.ts).
    return { ...ctx, askPerson: new PersonAsker({ key, used }), tasks: taskStoreInDb(db) };
  }

  /** The in-process fetch with the caller's credential on every request, and the caller this POST signed in. */
  #forwarder(signedIn: SignedIn | undefined, address: string): typeof fetch {
    // The tool call's trace goes with each request it makes (mcp/trace-context.ts): the request log joins them.
    if (!signedIn) return tracedFetch(this.#inProcessWith({ ...mcpGatewayEnv(), ...callerAddressEnv(address) }));
    const inProcess = this.#inProcessWith({ ...signedIn.env, ...callerAddressEnv(address) });
    return tracedFetch(((input: string | URL | Request, init?: RequestInit) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', signedIn.authorization);
      return inProcess(input, { ...init, headers });
    }) as typeof fetch);
  }

  /** The pool of one kind of caller; the least recently created kind is dropped past MAX_POOLS. */
  #poolFor(key: string, build: () => McpServer): McpServerPool {
    let pool = this.#pools.get(key);
    if (!pool) {
      if (this.#pools.size >= MAX_POOLS) this.#pools.delete(this.#pools.keys().next().value!);
      pool = new McpServerPool(build, true, 4, this.#deps.config.limits.maxJsonBodyBytes);
      this.#pools.set(key, pool);
    }
    return pool;
  }
}

/** `?x402_errors=` of a hosted endpoint: how "payment required" reaches this caller (McpContext's HostedCaller). */
function x402ErrorsOf(value: string | undefined): 'result' | 'jsonrpc' {
  if (value === undefined || value === 'result' || value === 'jsonrpc') return value ?? 'result';
  throw new AppError(
    'validation_failed',
    'x402_errors: "result" (default: payment required is a tool result, the x402 MCP transport) or "jsonrpc" (a JSON-RPC error with code 402 and the PaymentRequired in error.data)',
  );
}

/** `?toolsets=` of a hosted endpoint; dynamic mode is refused (stateless: a toolset enabled in one request would be gone in the next). */
function toolsetsOf(list: string | undefined, defaults: readonly Toolset[]): McpContext['toolsets'] {
  let toolsets: McpContext['toolsets'];
  try {
    toolsets = parseToolsets(list, defaults);
  } catch (e) {
    throw new AppError('validation_failed', `toolsets: ${(e as Error).message}`);
  }
  if (toolsets.dynamic)
    throw new AppError(
      'validation_failed',
      'toolsets: dynamic needs a session, which this endpoint does not keep; name the toolsets instead (?toolsets=apps,tables)',
    );
  return toolsets;
}
