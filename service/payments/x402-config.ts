import { getAddress, isAddress } from 'viem';
import { usdcToAtomic } from '../../shared/money.js';
import { AGENT_ACTIONS, DEFAULT_PRICES_UPDATED_AT } from '../../shared/agent-api/catalogue.js';
import type { X402Config, X402Mode } from '../kernel/config.js';

/** Anvil's well-known dev account #1: receives payments on the dev chain unless SVC_X402_RECIPIENT is set. */
export const DEV_RECIPIENT = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
/** Anvil's well-known dev account #0 (10 000 ETH on a fresh anvil): the dev chain's settler. Never use it elsewhere. */
export const DEV_SETTLER_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

/** `SVC_DEV_CHAIN_PORT`: a port, or unset = the service's port + 2 (any free port when PORT is 0). */
function parseDevChainPort(value: string | undefined, servicePort: number): number {
  if (value === undefined || value.trim() === '') return servicePort === 0 || servicePort > 65533 ? 0 : servicePort + 2;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`invalid configuration:\n  SVC_DEV_CHAIN_PORT: a port number, not "${value}"`);
  return n;
}

export interface X402Env {
  SVC_DEV_CHAIN_PORT?: string;
  PORT?: number;
  SVC_X402_MODE?: string;
  SVC_X402_RECIPIENT?: string;
  SVC_X402_RPC_URL?: string;
  SVC_X402_SETTLER_KEY?: string;
  SVC_X402_RECEIPT_KEY?: string;
  /** Parsed by config.ts like its other on/off settings (1, true or yes). */
  SVC_X402_RPC_BATCH?: boolean;
  SVC_X402_FACILITATOR_URL?: string;
  SVC_X402_FACILITATOR_AUTH?: string;
  SVC_X402_PRICES?: string;
  SVC_X402_PRICES_UPDATED_AT?: string;
  SVC_X402_MAX_TIMEOUT_SECONDS?: string;
  SVC_X402_ANVIL_PATH?: string;
  SVC_X402_ERC6492_FACTORIES?: string;
}

/** Parses the SVC_X402_* variables; throws a readable `invalid configuration` error. */
export function parseX402Config(e: X402Env): X402Config {
  const fail = (name: string, msg: string): never => {
    throw new Error(`invalid configuration:\n  ${name}: ${msg}`);
  };
  const mode = (e.SVC_X402_MODE?.trim() || 'dev') as X402Mode;
  if (!['dev', 'chain', 'remote'].includes(mode)) fail('SVC_X402_MODE', 'use dev, chain or remote');
  let recipient = e.SVC_X402_RECIPIENT?.trim();
  if (recipient) {
    if (!isAddress(recipient, { strict: false })) fail('SVC_X402_RECIPIENT', 'not a 0x address');
    recipient = getAddress(recipient).toLowerCase();
  } else if (mode === 'dev') recipient = DEV_RECIPIENT;
  else fail('SVC_X402_RECIPIENT', `required when SVC_X402_MODE=${mode} (the wallet that receives payments)`);

  const rpcUrl = e.SVC_X402_RPC_URL?.trim() || undefined;
  const settlerKey = e.SVC_X402_SETTLER_KEY?.trim() || undefined;
  const facilitatorUrl = e.SVC_X402_FACILITATOR_URL?.trim().replace(/\/+$/, '') || undefined;
  if (mode === 'chain') {
    if (!rpcUrl) fail('SVC_X402_RPC_URL', 'required when SVC_X402_MODE=chain');
    if (!settlerKey || !/^0x[0-9a-fA-F]{64}$/.test(settlerKey))
      fail('SVC_X402_SETTLER_KEY', 'required when SVC_X402_MODE=chain: a 0x-prefixed 32-byte hex private key');
  }
  const receiptKey = e.SVC_X402_RECEIPT_KEY?.trim() || undefined;
  if (receiptKey && !/^0x[0-9a-fA-F]{64}$/.test(receiptKey)) fail('SVC_X402_RECEIPT_KEY', 'a 0x-prefixed 32-byte hex private key (it signs receipts)');
  if (mode === 'remote' && !facilitatorUrl) fail('SVC_X402_FACILITATOR_URL', 'required when SVC_X402_MODE=remote');

  const prices: Record<string, string> = Object.fromEntries(AGENT_ACTIONS.map((a) => [a.name, a.price]));
  let overridden = false;
  if (e.SVC_X402_PRICES?.trim()) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(e.SVC_X402_PRICES);
    } catch {
      fail('SVC_X402_PRICES', 'not JSON; expected {"x402.create_app_from_html": "0.01", …}');
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) fail('SVC_X402_PRICES', 'expected a JSON object of action → price');
    for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
      const name = k.startsWith('x402.') ? k : `x402.${k}`;
      if (!(name in prices)) fail('SVC_X402_PRICES', `unknown action ${k}`);
      if (typeof v !== 'string') fail('SVC_X402_PRICES', `${k}: price must be a decimal string such as "0.005"`);
      try {
        usdcToAtomic(v as string);
      } catch (err) {
        fail('SVC_X402_PRICES', `${k}: ${(err as Error).message}`);
      }
      const isFree = AGENT_ACTIONS.find((a) => a.name === name)!.price === '0';
      if (isFree && usdcToAtomic(v as string) !== 0n) fail('SVC_X402_PRICES', `${k} is a free action and stays free`);
      prices[name] = v as string;
      overridden = true;
    }
  }
  const updatedAtText = e.SVC_X402_PRICES_UPDATED_AT?.trim();
  let pricesUpdatedAt = DEFAULT_PRICES_UPDATED_AT;
  if (updatedAtText) {
    pricesUpdatedAt = /^\d+$/.test(updatedAtText) ? Number(updatedAtText) : Date.parse(updatedAtText);
    if (!Number.isFinite(pricesUpdatedAt)) fail('SVC_X402_PRICES_UPDATED_AT', 'epoch milliseconds or an ISO date');
  } else if (overridden) {
    fail('SVC_X402_PRICES_UPDATED_AT', 'required with SVC_X402_PRICES, so every node reports the same price date');
  }
  const timeout = Number(e.SVC_X402_MAX_TIMEOUT_SECONDS?.trim() || 300);
  if (!Number.isInteger(timeout) || timeout < 10 || timeout > 3600) fail('SVC_X402_MAX_TIMEOUT_SECONDS', 'an integer from 10 to 3600');
  return {
    mode,
    recipient: recipient!,
    rpcUrl,
    settlerKey: settlerKey as `0x${string}` | undefined,
    receiptKey: receiptKey as `0x${string}` | undefined,
    rpcBatch: e.SVC_X402_RPC_BATCH ?? false,
    facilitatorUrl,
    facilitatorAuth: e.SVC_X402_FACILITATOR_AUTH?.trim() || undefined,
    prices,
    pricesUpdatedAt,
    maxTimeoutSeconds: timeout,
    anvilPath: e.SVC_X402_ANVIL_PATH?.trim() || undefined,
    devChainPort: parseDevChainPort(e.SVC_DEV_CHAIN_PORT, e.PORT ?? 8787),
    erc6492Factories: parseAddressList(e.SVC_X402_ERC6492_FACTORIES, 'SVC_X402_ERC6492_FACTORIES'),
  };
}

function parseAddressList(value: string | undefined, name: string): string[] {
  const items = (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  for (const a of items) if (!isAddress(a, { strict: false })) throw new Error(`invalid configuration:\n  ${name}: "${a}" is not a 0x address`);
  return items.map((a) => a.toLowerCase());
}
