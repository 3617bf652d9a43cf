import os from 'node:os';
import path from 'node:path';
import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import { isUsdcAmount, usdcToAtomic } from '../shared/money.js';
import { SecretKey } from './secret-key.js';

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined));
const usdc = (dflt: string | undefined) =>
  z
    .string()
    .optional()
    .transform((v) => (v?.trim() ? v.trim() : dflt))
    .refine((v) => v === undefined || isUsdcAmount(v), 'a USDC amount such as 0.05 (at most 6 decimals)');

/**
 * The wallet's environment. The spend policy comes from here only: nothing an agent sends through a
 * tool can change a cap, an allowed origin or the ledger path.
 */
export const WalletEnvSchema = z.object({
  SVC_URL: z.string().url().default('http://localhost:8787'),
  SVC_WALLET_PRIVATE_KEY: optionalText,
  SVC_WALLET_KEY_FILE: optionalText,
  SVC_MAX_USDC_PER_CALL: usdc('0.05'),
  SVC_MAX_USDC_PER_SESSION: usdc('1.00'),
  SVC_MAX_USDC_PER_DAY: usdc('5.00'),
  SVC_MAX_USDC_TOTAL: usdc(undefined),
  /** Comma-separated origins the wallet may pay; default: the origin of SVC_URL only. */
  SVC_ALLOWED_ORIGINS: optionalText,
  SVC_SPEND_LEDGER: optionalText,
  /** Longest validity window of a signed authorization the wallet accepts to sign. */
  SVC_MAX_PAYMENT_TIMEOUT_SECONDS: z.coerce.number().int().positive().max(3600).default(300),
  /** Timeout of one paid request; when it passes the payment's outcome is unknown and counts as spent. */
  SVC_PAYMENT_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** JSON-RPC URL of the chain, for the on-chain balance; default: the one the service advertises, if any. */
  SVC_RPC_URL: optionalText,
  /**
   * Payments above this (USDC) need the person's approval, asked by svc-mcp before anything is signed
   * (docs/mcp.md, "Approval above a line"); unset: never asked.
   */
  SVC_APPROVAL_ABOVE: usdc(undefined),
  /** The recipient the person knows the service pays to: pinned outright instead of on first use. */
  SVC_PAY_TO: optionalText.refine((v) => v === undefined || isAddress(v, { strict: false }), 'an EVM address (0x + 40 hex digits)'),
  /** Per-tool caps over the rolling 24 h: `deploy_site=0.05,convert_data_file_to_api=0.02`. */
  SVC_MAX_USDC_PER_TOOL: optionalText,
  /** The most payments signed in any rolling hour, across every process sharing the ledger. */
  SVC_MAX_PAID_CALLS_PER_HOUR: optionalText.refine((v) => v === undefined || /^[1-9]\d{0,5}$/.test(v), 'a whole number of calls, at least 1'),
});

/**
 * `deploy_site=0.05,convert_data_file_to_api=0.02` → tool → atomic cap; throws naming the bad part.
 * Which tools exist is the caller's to check (svc-mcp's tools: mcp/config.ts).
 */
export function parsePerToolCaps(text: string | undefined): Map<string, bigint> {
  const caps = new Map<string, bigint>();
  for (const part of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z][a-z0-9_]*)\s*=\s*(\S+)$/.exec(part);
    if (!m || !isUsdcAmount(m[2]!)) throw new Error(`"${part}" is not tool=USDC (e.g. deploy_site=0.05)`);
    if (caps.has(m[1]!)) throw new Error(`${m[1]} is given twice`);
    caps.set(m[1]!, usdcToAtomic(m[2]!));
  }
  return caps;
}

export interface Caps {
  /** Atomic USDC units (6 decimals). */
  perCall: bigint;
  perSession: bigint;
  perDay: bigint;
  total?: bigint;
  /** Tool name → the most that tool's calls may spend over the rolling 24 h (SVC_MAX_USDC_PER_TOOL). */
  perTool?: ReadonlyMap<string, bigint>;
  /** The most payments signed over any rolling hour (SVC_MAX_PAID_CALLS_PER_HOUR). */
  callsPerHour?: number;
}

export interface WalletConfig {
  /** Service origin + base path, no trailing slash. */
  serviceUrl: string;
  allowedOrigins: string[];
  key?: SecretKey;
  caps: Caps;
  ledgerPath: string;
  maxPaymentTimeoutSeconds: number;
  requestTimeoutMs: number;
  rpcUrl?: string;
  /** Where each service's payee is pinned (payees.ts): beside the ledger. */
  payeesPath: string;
  /** SVC_PAY_TO: the recipient pinned by the person. */
  payTo?: `0x${string}`;
  /** SVC_APPROVAL_ABOVE in atomic units: a payment above it is signed only once the person approved it. */
  approvalAbove?: bigint;
}

export function defaultLedgerPath(): string {
  return path.join(os.homedir(), '.svc', 'spend-ledger.json');
}

export function loadWalletConfig(env: Record<string, string | undefined> = process.env): WalletConfig {
  const parsed = WalletEnvSchema.safeParse(env);
  if (!parsed.success) {
    // Issues name the variable and the rule; zod does not echo values, so a bad key is not printed.
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid wallet configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.SVC_WALLET_PRIVATE_KEY && e.SVC_WALLET_KEY_FILE) {
    throw new Error('invalid wallet configuration:\n  set SVC_WALLET_PRIVATE_KEY or SVC_WALLET_KEY_FILE, not both');
  }
  const serviceUrl = e.SVC_URL.replace(/\/+$/, '');
  const allowedOrigins = (e.SVC_ALLOWED_ORIGINS ?? new URL(serviceUrl).origin)
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)
    .map((o) => new URL(o).origin);
  let perTool: Map<string, bigint>;
  try {
    perTool = parsePerToolCaps(e.SVC_MAX_USDC_PER_TOOL);
  } catch (err) {
    throw new Error(`invalid wallet configuration:\n  SVC_MAX_USDC_PER_TOOL: ${(err as Error).message}`);
  }
  const ledgerPath = path.resolve(e.SVC_SPEND_LEDGER ?? defaultLedgerPath());
  const key = e.SVC_WALLET_PRIVATE_KEY
    ? SecretKey.parse(e.SVC_WALLET_PRIVATE_KEY, 'SVC_WALLET_PRIVATE_KEY')
    : e.SVC_WALLET_KEY_FILE
      ? SecretKey.fromFile(e.SVC_WALLET_KEY_FILE)
      : undefined;
  return {
    serviceUrl,
    allowedOrigins,
    key,
    caps: {
      perCall: usdcToAtomic(e.SVC_MAX_USDC_PER_CALL!),
      perSession: usdcToAtomic(e.SVC_MAX_USDC_PER_SESSION!),
      perDay: usdcToAtomic(e.SVC_MAX_USDC_PER_DAY!),
      total: e.SVC_MAX_USDC_TOTAL ? usdcToAtomic(e.SVC_MAX_USDC_TOTAL) : undefined,
      ...(perTool.size ? { perTool } : {}),
      ...(e.SVC_MAX_PAID_CALLS_PER_HOUR ? { callsPerHour: Number(e.SVC_MAX_PAID_CALLS_PER_HOUR) } : {}),
    },
    ledgerPath,
    payeesPath: path.join(path.dirname(ledgerPath), 'known-payees.json'),
    ...(e.SVC_PAY_TO ? { payTo: getAddress(e.SVC_PAY_TO) } : {}),
    ...(e.SVC_APPROVAL_ABOVE ? { approvalAbove: usdcToAtomic(e.SVC_APPROVAL_ABOVE) } : {}),
    maxPaymentTimeoutSeconds: e.SVC_MAX_PAYMENT_TIMEOUT_SECONDS,
    requestTimeoutMs: e.SVC_PAYMENT_REQUEST_TIMEOUT_MS,
    rpcUrl: e.SVC_RPC_URL,
  };
}
