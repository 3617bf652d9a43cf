import path from 'node:path';
import { z } from 'zod';
import { loadWalletConfig, type WalletConfig } from '../wallet/config.js';
import { defaultToolsets, PAYING_TOOLS, parseToolsets, TOOLSET_OF, type ToolsetChoice } from './toolsets.js';

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v?.trim() ? v.trim() : undefined));
const bool = z
  .string()
  .optional()
  .transform((v) => v === '1' || v?.toLowerCase() === 'true' || v?.toLowerCase() === 'yes');

/**
 * The MCP server's environment (the wallet's variables are parsed by wallet/config.ts). Read once at
 * start; the agent cannot change any of it through a tool.
 */
export const McpEnvSchema = z.object({
  SVC_URL: z.string().url().default('http://localhost:8787'),
  /** How svc-mcp reaches SVC_URL: its HTTP APIs (x402 over HTTP), or its hosted endpoint (x402 over MCP _meta): /mcp with SVC_API_KEY, /mcp/x402 without. */
  SVC_TRANSPORT: z.enum(['http', 'mcp']).default('http'),
  /** Personal API key (svc_pat_…) for Account API calls; optional. */
  SVC_API_KEY: optionalText,
  /** Default Table write key (x-svc-write-key) used by table tools when the call gives none. */
  SVC_TABLE_WRITE_KEY: optionalText,
  /** Where the write keys of Tables the wallet created are kept (table-write-keys.ts); `off`: in memory only. Default: beside the spend ledger. */
  SVC_TABLE_KEYS_FILE: optionalText,
  /** Only tools that can neither write nor pay. */
  SVC_READ_ONLY: bool,
  /** Toolsets listed: comma-separated names from mcp/toolsets.ts, `all`, `default`, `dynamic`. */
  SVC_TOOLSETS: optionalText,
  /** Extra Host names the HTTP transport accepts besides localhost, 127.0.0.1 and [::1] (comma-separated). */
  SVC_MCP_ALLOWED_HOSTS: optionalText,
  /** Extra Origins the HTTP transport accepts besides http(s)://localhost|127.0.0.1|[::1][:port] (comma-separated). */
  SVC_MCP_ALLOWED_ORIGINS: optionalText,
  /** Largest local file deploy_site reads, bytes. */
  SVC_MCP_MAX_FILE_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
});

export interface McpConfig {
  serviceUrl: string;
  transport: 'http' | 'mcp';
  apiKey?: string;
  tableWriteKey?: string;
  /** The file of the write keys of Tables the wallet created, or null (memory only). */
  tableKeysFile: string | null;
  readOnly: boolean;
  toolsets: ToolsetChoice;
  allowedHosts: string[];
  allowedOrigins: string[];
  maxFileBytes: number;
  wallet: WalletConfig;
  /**
   * What the user restarts to change this configuration, as refusals name it: `svc-mcp`, or the
   * service itself for the loopback endpoint `svc serve` starts (cli/embedded-mcp.ts).
   */
  program: string;
}

const list = (v: string | undefined) =>
  v
    ? v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : [];

export function loadMcpConfig(env: Record<string, string | undefined> = process.env): McpConfig {
  const parsed = McpEnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid MCP server configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const wallet = loadWalletConfig(env);
  const notPaying = [...(wallet.caps.perTool?.keys() ?? [])].filter((t) => !PAYING_TOOLS.includes(t));
  if (notPaying.length)
    throw new Error(
      `invalid MCP server configuration:\n  SVC_MAX_USDC_PER_TOOL: ${notPaying
        .map((t) => (t in TOOLSET_OF ? `${t} never pays (it is free)` : `no tool is named ${t}`))
        .join('; ')}. The tools that pay: ${PAYING_TOOLS.join(', ')}.`,
    );
  let toolsets: ToolsetChoice;
  try {
    toolsets = parseToolsets(e.SVC_TOOLSETS, defaultToolsets({ wallet: wallet.key !== undefined, apiKey: e.SVC_API_KEY !== undefined }));
  } catch (err) {
    throw new Error(`invalid MCP server configuration:\n  SVC_TOOLSETS: ${(err as Error).message}`);
  }
  return {
    serviceUrl: e.SVC_URL.replace(/\/+$/, ''),
    transport: e.SVC_TRANSPORT,
    apiKey: e.SVC_API_KEY,
    tableWriteKey: e.SVC_TABLE_WRITE_KEY,
    tableKeysFile: tableKeysFile(e.SVC_TABLE_KEYS_FILE, wallet.ledgerPath),
    readOnly: e.SVC_READ_ONLY,
    toolsets,
    allowedHosts: list(e.SVC_MCP_ALLOWED_HOSTS).map((h) => h.toLowerCase()),
    allowedOrigins: list(e.SVC_MCP_ALLOWED_ORIGINS).map((o) => new URL(o).origin),
    maxFileBytes: e.SVC_MCP_MAX_FILE_BYTES,
    wallet,
    program: 'svc-mcp',
  };
}

function tableKeysFile(setting: string | undefined, ledgerPath: string): string | null {
  if (setting?.toLowerCase() === 'off') return null;
  return path.resolve(setting ?? path.join(path.dirname(ledgerPath), 'table-write-keys.json'));
}
