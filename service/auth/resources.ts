import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { AppError } from '../kernel/app-error.js';
import type { Principal } from '../kernel/request-env.js';

/**
 * The protected resources of RFC 8707 / RFC 9728: the Account API and the hosted MCP endpoint. An
 * OAuth token is bound to the one it was issued for and refused at the other (no token passthrough).
 * Personal keys (`svc_pat_…`) are not bound to a resource.
 */
export function accountApiResource(deps: Deps): string {
  return `${deps.config.baseUrl}/api/v1`;
}

export function mcpResource(deps: Deps): string {
  return `${deps.config.baseUrl}/mcp`;
}

/** Where a 401 at `{base}/mcp` points clients (RFC 9728 §3.1: the path-suffixed well-known URL). */
export function mcpResourceMetadataUrl(deps: Deps): string {
  return `${deps.config.baseUrl}/.well-known/oauth-protected-resource/mcp`;
}

export function knownResources(deps: Deps): string[] {
  return [accountApiResource(deps), mcpResource(deps)];
}

/** Key of the hosted MCP endpoint's mark in an in-process request's env: private to this module. */
const GATEWAY = Symbol('svc.mcpGateway');

/** Who the hosted MCP endpoint already signed in for an in-process request: the credential and what it resolved to. */
interface GatewayCaller {
  credential: string;
  principal: Principal;
}

/**
 * The Hono `env` the hosted MCP endpoint passes to `app.request(url, init, env)` when it calls the
 * service's routes in process, with the caller it signed in (none on `/mcp/x402`). Marked by a symbol
 * only this module holds: a request that arrives over HTTP carries @hono/node-server's own env
 * object, so no header or parameter can claim to come through the MCP endpoint.
 */
export function mcpGatewayEnv(caller?: GatewayCaller): Record<symbol, GatewayCaller | null> {
  return { [GATEWAY]: caller ?? null };
}

export function viaMcpGateway(c: Context): boolean {
  const env = c.env as Record<symbol, unknown> | undefined;
  return typeof env === 'object' && env !== null && GATEWAY in env;
}

/**
 * The principal the hosted MCP endpoint signed in for this in-process request when `credential` is
 * the one it signed in with: its POST was authenticated and counted against the rate limit, and the
 * tool's call of a route is part of that request, not another.
 */
export function gatewayPrincipal(c: Context, credential: string | undefined): Principal | undefined {
  if (!viaMcpGateway(c) || credential === undefined) return undefined;
  const caller = (c.env as Record<symbol, GatewayCaller | null>)[GATEWAY];
  return caller && caller.credential === credential ? caller.principal : undefined;
}

/** The resource a request is for: the MCP endpoint's when it comes through the gateway, else the Account API's. */
export function resourceOfRequest(deps: Deps, c: Context): string {
  return viaMcpGateway(c) ? mcpResource(deps) : accountApiResource(deps);
}

/** Refuses an OAuth token issued for another resource (401 invalid_token naming both). */
export function assertAudience(principal: Principal, expected: string, refuse: (message: string) => AppError): void {
  if (principal.resource !== undefined && principal.resource !== expected)
    throw refuse(`this access token was issued for ${principal.resource}, not ${expected}; ask for a token with resource=${expected}`);
}
