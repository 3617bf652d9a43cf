import type { Context } from 'hono';
import type { Deps } from '../deps.js';
import type { AppError } from '../http/app-error.js';
import type { Principal } from './principal.js';

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

/**
 * The Hono `env` the hosted MCP endpoint passes to `app.request(url, init, MCP_GATEWAY_ENV)` when it
 * calls the service's routes in process for a caller. Compared by identity: a request that arrives
 * over HTTP carries @hono/node-server's own env object, so no header or parameter can claim to come
 * through the MCP endpoint.
 */
export const MCP_GATEWAY_ENV: Readonly<Record<string, unknown>> = Object.freeze({ svcMcpGateway: true });

export function viaMcpGateway(c: Context): boolean {
  return c.env === MCP_GATEWAY_ENV;
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
