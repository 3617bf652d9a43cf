import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/server';
import { WalletError } from '../wallet/errors.js';
import type { Upstream } from './context.js';

/**
 * svc-mcp in front of a hosted svc (SVC_TRANSPORT=mcp): the remote server's tools beside the local
 * wallet tools. With SVC_API_KEY it signs in at `/mcp` (the tools the key's scopes allow, Account API
 * included); without one it uses `/mcp/x402`, where the wallet alone is the caller (Agent API and
 * Table tools). A paid tool is paid by the local wallet through x402 over MCP
 * (`_meta["x402/payment"]`, wallet/mcp-payer.ts): the same caps, ledger and receipts as payments over
 * HTTP, and the remote endpoint never holds a wallet of ours.
 *
 * Loaded only in that mode (mcp/server.ts): otherwise the SDK's client and its JSON Schema validator
 * (ajv) are not read before a stdio client's `initialize` is answered.
 */

/**
 * The fetch of the connection to the hosted endpoint: it never follows a redirect, since a paid
 * call's payment rides in the request (`_meta["x402/payment"]`) and would go wherever the redirect
 * points. A redirect is refused, naming SVC_URL; a paid call met by one counts its payment as spent
 * until the chain tells (mcp-payer.ts), as over HTTP.
 */
export function withoutRedirects(fetchImpl: typeof fetch = fetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const res = await fetchImpl(input, { ...init, redirect: 'manual' });
    if (res.status < 300 || res.status >= 400) return res;
    throw new WalletError(
      'redirect_refused',
      `The hosted MCP endpoint answered with a redirect (HTTP ${res.status} to ${res.headers.get('location') ?? 'nowhere'}); svc-mcp never follows one, as a paid call's payment rides in the request. Check SVC_URL (the service's own address, e.g. https rather than http); tell the user.`,
    );
  }) as typeof fetch;
}

/** Connects to the hosted endpoint (signed in with the personal key, or as a wallet) and reads its tool list. */
export async function connectUpstream(serviceUrl: string, apiKey: string | undefined, fetchImpl?: typeof fetch): Promise<Upstream> {
  const client = new Client({ name: 'svc-mcp', version: '0.1.0' });
  const url = new URL(`${serviceUrl}${apiKey ? '/mcp' : '/mcp/x402'}?toolsets=all`);
  const requestInit = apiKey ? { headers: { authorization: `Bearer ${apiKey}` } } : undefined;
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit, fetch: withoutRedirects(fetchImpl) }));
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...(page.tools as Tool[]));
    cursor = page.nextCursor;
  } while (cursor);
  return { client, tools, close: () => client.close() };
}
