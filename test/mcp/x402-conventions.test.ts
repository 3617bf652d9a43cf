import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { x402Client } from '@x402/core/client';
import { registerExactEvmScheme } from '@x402/evm/exact/client';
import { createSIWxPayload, encodeSIWxHeader, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import { type EIP712SignedReceipt, verifyReceiptSignatureEIP712 } from '@x402/extensions/offer-receipt';
import type { PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { agentsWithX402Client } from '../interop/clients.js';
import { devChain, fundedWallet, html } from '../payments/helpers.js';

// Every x402-over-MCP client convention against the hosted endpoints, on the dev chain: the transport
// spec's (PaymentRequired in structuredContent and the text, payment object in _meta), Cloudflare's
// agents/x402 withX402Client (reads _meta["x402/error"], sends a base64 string), and the earlier
// draft's JSON-RPC error 402 (asked for with ?x402_errors=jsonrpc).
// Cloudflare's client comes from the interop package (test/interop), installed on first use.
const withX402Client = await agentsWithX402Client();
let h: Harness;
const PRICE = 7000n; // create_app_from_html, 0.007 USDC

beforeAll(async () => {
  h = await startHarness('pglite', { SVC_X402_MODE: 'dev' }, { mount: (app, deps) => mountHostedMcp(app, deps) });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

async function connect(path: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'conventions-test', version: '1.0.0' });
  const requestInit = key ? { headers: { authorization: `Bearer ${key}` } } : undefined;
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}${path}`), { requestInit }));
  return client;
}
const text = (r: CallToolResult) => r.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
const balances = (payer: PrivateKeyAccount) => Promise.all([devChain(h).balanceOf(payer.address), devChain(h).balanceOf(h.config.x402.recipient as string)]);

async function sign(payer: PrivateKeyAccount, required: unknown): Promise<Record<string, unknown>> {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: payer as never });
  return (await client.createPaymentPayload(required as never)) as unknown as Record<string, unknown>;
}
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe('x402 over MCP: every client convention', () => {
  it('the unpaid result carries the PaymentRequired in structuredContent, in the text and in _meta["x402/error"]', async () => {
    const client = await connect('/mcp/x402');
    const unpaid = (await client.callTool({ name: 'create_app_from_html', arguments: { appName: 'conv-unpaid', html: html('x') } })) as CallToolResult;
    expect(unpaid.isError).toBe(true);
    const required = unpaid.structuredContent as { x402Version: number; accepts: { amount: string }[] };
    expect(required).toMatchObject({ x402Version: 2, accepts: [{ scheme: 'exact', network: 'eip155:8453', amount: '7000' }] });
    expect(unpaid._meta?.['x402/error']).toEqual(required);
    expect(JSON.parse(text(unpaid))['x402/error']).toMatchObject({ code: 402, data: required });
    await client.close();
  });

  it("Cloudflare's withX402Client (agents/x402) pays /mcp/x402: one charge of the listed price, and the app serves", async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const before = await balances(payer);
    const client = withX402Client(await connect('/mcp/x402'), { account: payer as never, network: 'eip155:8453' });
    const paid = (await client.callTool(null, {
      name: 'create_app_from_html',
      arguments: { appName: 'cf-agents-paid', html: html('Paid by agents') },
    })) as CallToolResult;
    expect(paid.isError, text(paid)).toBeFalsy();
    expect(paid._meta?.['x402/payment-response']).toMatchObject({ success: true, network: 'eip155:8453', payer: payer.address.toLowerCase() });
    // The settlement also carries the offer-receipt extension's signed receipt.
    const settled = paid._meta?.['x402/payment-response'] as {
      transaction: string;
      extensions: { 'offer-receipt': { info: { receipt: EIP712SignedReceipt } } };
    };
    const signed = await verifyReceiptSignatureEIP712(settled.extensions['offer-receipt'].info.receipt);
    expect(signed.payload).toMatchObject({ payer: payer.address.toLowerCase(), transaction: settled.transaction });
    const app = (paid.structuredContent as { app: { pathUrl: string } }).app;
    expect(await (await fetch(app.pathUrl)).text()).toContain('Paid by agents');
    const after = await balances(payer);
    expect([before[0] - after[0], after[1] - before[1]]).toEqual([PRICE, PRICE]);
    await client.close();
  });

  it("withX402Client's confirmation callback is shown svc's price and payee; declined, nothing is signed or charged; approved, one charge", async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const before = await balances(payer);
    const client = withX402Client(await connect('/mcp/x402'), { account: payer as never });
    const shown: { amount?: string; maxAmountRequired?: string; payTo: string }[][] = [];
    const ask = (answer: boolean) => async (accepts: unknown[]) => {
      shown.push(accepts as never);
      return answer;
    };
    const declined = (await client.callTool(ask(false), {
      name: 'create_app_from_html',
      arguments: { appName: 'cf-declined', html: html('x') },
    })) as CallToolResult;
    expect(declined.isError).toBe(true);
    expect((await fetch(`${h.url}/s/cf-declined/`)).status).toBe(404);
    expect(await balances(payer)).toEqual(before);
    const approved = (await client.callTool(ask(true), {
      name: 'create_app_from_html',
      arguments: { appName: 'cf-approved', html: html('Approved') },
    })) as CallToolResult;
    expect(approved.isError, text(approved)).toBeFalsy();
    expect(shown).toHaveLength(2);
    expect(BigInt(shown[0]![0]!.amount ?? shown[0]![0]!.maxAmountRequired ?? '0')).toBe(PRICE);
    expect(shown[0]![0]!.payTo.toLowerCase()).toBe(h.config.x402.recipient.toLowerCase());
    const after = await balances(payer);
    expect([before[0] - after[0], after[1] - before[1]]).toEqual([PRICE, PRICE]);
    await client.close();
  });

  it("withX402Client pays the signed-in /mcp with ?toolsets=default,apps; the app is the paying wallet's", async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const before = await balances(payer);
    const client = withX402Client(await connect('/mcp?toolsets=default,apps', (await h.account()).key), { account: payer as never });
    const paid = (await client.callTool(null, {
      name: 'create_app_from_html',
      arguments: { appName: 'cf-agents-signed-in', html: html('Signed in') },
    })) as CallToolResult;
    expect(paid.isError, text(paid)).toBeFalsy();
    expect(await (await fetch((paid.structuredContent as { app: { pathUrl: string } }).app.pathUrl)).text()).toContain('Signed in');
    const after = await balances(payer);
    expect([before[0] - after[0], after[1] - before[1]]).toEqual([PRICE, PRICE]);
    // A payment above the client's own cap is never signed: nothing charged.
    const capped = withX402Client(await connect('/mcp/x402'), { account: payer as never, maxPaymentValue: 1000n });
    const refused = (await capped.callTool(null, { name: 'create_app_from_html', arguments: { appName: 'cf-capped', html: html('x') } })) as CallToolResult;
    expect(text(refused)).toBe('Payment exceeds client cap: 7000 > 1000');
    expect((await balances(payer))[0]).toBe(after[0]);
    await client.close();
    await capped.close();
  });

  it('a base64 string and the object it encodes are one payment: the second answers the first result, one charge', async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const client = await connect('/mcp/x402');
    const args = { appName: 'conv-once', html: html('Once') };
    const unpaid = (await client.callTool({ name: 'create_app_from_html', arguments: args })) as CallToolResult;
    const payment = await sign(payer, unpaid.structuredContent);
    const before = await balances(payer);
    const asString = (await client.callTool({ name: 'create_app_from_html', arguments: args, _meta: { 'x402/payment': b64(payment) } })) as CallToolResult;
    const asObject = (await client.callTool({ name: 'create_app_from_html', arguments: args, _meta: { 'x402/payment': payment } })) as CallToolResult;
    expect(asString.isError, text(asString)).toBeFalsy();
    expect(asObject.isError, text(asObject)).toBeFalsy();
    expect(asObject.structuredContent).toEqual(asString.structuredContent);
    // For another request, the same payment (either form) is refused.
    const other = (await client.callTool({
      name: 'create_app_from_html',
      arguments: { appName: 'conv-twice', html: html('Twice') },
      _meta: { 'x402/payment': b64(payment) },
    })) as CallToolResult;
    expect(other.isError).toBe(true);
    expect(other._meta?.['x402/payment-response']).toMatchObject({ success: false, errorReason: 'payment_already_used' });
    const after = await balances(payer);
    expect([before[0] - after[0], after[1] - before[1]]).toEqual([PRICE, PRICE]);
    await client.close();
  });

  it('?x402_errors=jsonrpc: payment required is a JSON-RPC error 402 with the PaymentRequired in error.data; paying works the same', async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const client = await connect('/mcp/x402?x402_errors=jsonrpc');
    const args = { appName: 'conv-jsonrpc', html: html('JSON-RPC form') };
    const asked = await client.callTool({ name: 'create_app_from_html', arguments: args }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(asked).toBeInstanceOf(McpError);
    const error = asked as McpError;
    expect(error.code).toBe(402);
    expect(error.message).toContain('_meta["x402/payment"]');
    expect(error.data).toMatchObject({ x402Version: 2, accepts: [{ amount: '7000', network: 'eip155:8453' }] });
    // A refused payment is the same error again (nothing charged).
    const underpaid = await sign(payer, {
      ...(error.data as object),
      accepts: [{ ...(error.data as { accepts: object[] }).accepts[0], amount: '1' }],
    });
    const refused = await client.callTool({ name: 'create_app_from_html', arguments: args, _meta: { 'x402/payment': underpaid } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((refused as McpError).code).toBe(402);
    const before = await balances(payer);
    const paid = (await client.callTool({
      name: 'create_app_from_html',
      arguments: args,
      _meta: { 'x402/payment': await sign(payer, error.data) },
    })) as CallToolResult;
    expect(paid.isError, text(paid)).toBeFalsy();
    expect(await (await fetch((paid.structuredContent as { app: { pathUrl: string } }).app.pathUrl)).text()).toContain('JSON-RPC form');
    const after = await balances(payer);
    expect([before[0] - after[0], after[1] - before[1]]).toEqual([PRICE, PRICE]);
    // Other failures stay tool results in this form too.
    const missing = (await client.callTool({ name: 'publish_app', arguments: {} })) as CallToolResult;
    expect(missing.isError).toBe(true);
    await client.close();
  });

  it('list_apps signs in with Sign-In-With-X over MCP: the proof in _meta["x402/sign-in-with-x"], once', async () => {
    const payer = await fundedWallet(h, 1_000_000n);
    const client = withX402Client(await connect('/mcp/x402'), { account: payer as never });
    const made = (await client.callTool(null, { name: 'create_app_from_html', arguments: { appName: 'conv-siwx', html: html('Mine') } })) as CallToolResult;
    expect(made.isError, text(made)).toBeFalsy();
    await client.close();
    const plain = await connect('/mcp/x402');
    const before = await balances(payer);
    const asked = (await plain.callTool({ name: 'list_apps', arguments: {} })) as CallToolResult;
    expect(asked.isError).toBe(true);
    expect(JSON.parse(text(asked))['x402/error'].message).toContain('_meta["x402/sign-in-with-x"]');
    const siwx = (asked.structuredContent as { extensions: { 'sign-in-with-x': SIWxExtension } }).extensions['sign-in-with-x'];
    const proof = encodeSIWxHeader(await createSIWxPayload({ ...siwx.info, chainId: 'eip155:8453', type: 'eip191' }, payer, siwx.info.uri));
    const listed = (await plain.callTool({ name: 'list_apps', arguments: {}, _meta: { 'x402/sign-in-with-x': proof } })) as CallToolResult;
    expect(listed.isError, text(listed)).toBeFalsy();
    expect((listed.structuredContent as { apps: { appName: string }[] }).apps.map((a) => a.appName)).toEqual(['conv-siwx']);
    const replayed = (await plain.callTool({ name: 'list_apps', arguments: {}, _meta: { 'x402/sign-in-with-x': proof } })) as CallToolResult;
    expect(replayed.isError).toBe(true);
    expect(text(replayed)).not.toContain('conv-siwx');
    expect(await balances(payer)).toEqual(before);
    await plain.close();
  });

  it('refuses an unknown ?x402_errors= with a 400 that names the choices', async () => {
    const res = await fetch(`${h.url}/mcp/x402?x402_errors=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/x402_errors: "result" \(default.*or "jsonrpc"/);
  });
});
