import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { isProcessAlive } from '../../shared/process-alive.js';

/**
 * Third-party clients the interop tests drive svc with (x402-fetch 1.x, Cloudflare's agents, the MCP
 * conformance runners), kept out of the clone's install: together they bring ~800 MB (wagmi,
 * WalletConnect, Solana, Babel 8 with its Node ≥22 engine warnings) that neither svc nor its other
 * tests use. They live in this private package with its own lockfile, installed here (`npm ci` in
 * this folder) the first time a test asks for one, then reused while the lockfile is unchanged.
 * Two test workers asking at once install once: the first takes a lock folder, the other waits.
 */
const DIR = import.meta.dirname;
const STAMP = path.join(DIR, 'node_modules', '.svc-lock-sha256');
const LOCK = path.join(DIR, '.installing');

let ready: Promise<void> | undefined;

/** Installs this package's clients unless installed from the current lockfile; one install at a time. */
export function installInteropClients(): Promise<void> {
  ready ??= install();
  return ready;
}

function lockHash(): string {
  return createHash('sha256')
    .update(fs.readFileSync(path.join(DIR, 'package-lock.json')))
    .digest('hex');
}

function installed(hash: string): boolean {
  try {
    return fs.readFileSync(STAMP, 'utf8') === hash;
  } catch {
    return false;
  }
}

async function install(): Promise<void> {
  const hash = lockHash();
  const deadline = Date.now() + 15 * 60_000;
  while (!installed(hash)) {
    if (takeLock()) {
      try {
        if (!installed(hash)) await npmCi(hash);
      } finally {
        fs.rmSync(LOCK, { recursive: true, force: true });
      }
      return;
    }
    if (Date.now() > deadline) throw new Error(`interop clients: still locked by another install after 15 min (${LOCK})`);
    await sleep(1000);
  }
}

/** The lock folder, with the holder's pid inside; a holder that died leaves a lock the next taker removes. */
function takeLock(): boolean {
  try {
    fs.mkdirSync(LOCK);
  } catch {
    let pid = 0;
    try {
      pid = Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8'));
    } catch {
      // Just made by its holder, pid not written yet: wait for it.
      return false;
    }
    if (pid && isProcessAlive(pid)) return false;
    fs.rmSync(LOCK, { recursive: true, force: true });
    return takeLock();
  }
  fs.writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
  return true;
}

async function npmCi(hash: string): Promise<void> {
  const started = Date.now();
  process.stderr.write('interop clients: npm ci in test/interop (first use; ~1–3 min)\n');
  // `npm test` runs vitest under npm, whose settings for the svc package (npm_config_*, npm_package_*)
  // would otherwise apply to this install.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_(package|lifecycle|config_(local_)?prefix)/i.test(k)));
  await new Promise<void>((resolve, reject) =>
    execFile(
      'npm',
      ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--prefix', DIR],
      { cwd: DIR, env, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => (err ? reject(new Error(`interop clients: npm ci in ${DIR} failed: ${err.message}\n${stdout}\n${stderr}`)) : resolve()),
    ),
  );
  fs.writeFileSync(STAMP, hash);
  process.stderr.write(`interop clients: installed in ${Math.round((Date.now() - started) / 1000)} s\n`);
}

/** A package of the interop clients, imported from their own node_modules (installed first if needed). */
async function load<T>(specifier: string): Promise<T> {
  await installInteropClients();
  // A specifier in a variable: resolved from this folder at run time (test/interop/node_modules),
  // and not looked up by the type checker, which runs without these packages.
  return (await import(specifier)) as T;
}

/** x402-fetch 1.2.0's `wrapFetchWithPayment` (an x402 v1 client). */
export type WrapFetchV1 = (fetch: typeof globalThis.fetch, signer: unknown, maxValue?: bigint, selector?: unknown) => typeof globalThis.fetch;
export async function x402FetchV1(): Promise<WrapFetchV1> {
  return (await load<{ wrapFetchWithPayment: WrapFetchV1 }>('x402-fetch')).wrapFetchWithPayment;
}

/** What the tests use of an MCP client wrapped by agents/x402's `withX402Client` (its .d.ts, narrowed). */
export type X402Confirmation = (accepts: unknown[]) => Promise<boolean>;
export interface X402McpClient {
  callTool(confirm: X402Confirmation | null, params: { name: string; arguments?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}
export type WithX402Client = (
  client: unknown,
  options: { account: unknown; network?: string; maxPaymentValue?: bigint; confirmationCallback?: X402Confirmation },
) => X402McpClient;
/** Cloudflare's `withX402Client` (agents 0.32.0, `agents/x402`). */
export async function agentsWithX402Client(): Promise<WithX402Client> {
  return (await load<{ withX402Client: WithX402Client }>('agents/x402')).withX402Client;
}

/**
 * The MCP conformance runners (@modelcontextprotocol/conformance), one alias a version: 0.1.13 (runs
 * on Node 20), 0.1.16 (the 2025-11-25 scenarios; imports `fs.globSync`, Node ≥ 22) and 0.2.0-alpha.12
 * (2026-07-28 scenarios, which no 0.1.x has; Node ≥ 22 too). All three name their command `conformance`,
 * so none is linked in node_modules/.bin that could be trusted: run the script with `node`.
 */
export const CONFORMANCE_RUNNERS = { '0.1.13': 'conformance-0113', '0.1.16': 'conformance-0116', '0.2.0-alpha.12': 'conformance-0200a12' } as const;
export type ConformanceVersion = keyof typeof CONFORMANCE_RUNNERS;

/** The script of a conformance runner (installed first if needed), to run as `node <script> server …`. */
export async function conformanceScript(version: ConformanceVersion): Promise<string> {
  await installInteropClients();
  return path.join(DIR, 'node_modules', CONFORMANCE_RUNNERS[version], 'dist', 'index.js');
}

/**
 * The script behind a command of the interop clients (`mcp-remote`, `mcp-inspector`), installed
 * first if needed, to run as `node <script> …` (as its user's npx would).
 */
export async function interopBin(command: 'mcp-remote' | 'mcp-inspector'): Promise<string> {
  await installInteropClients();
  return fs.realpathSync(path.join(DIR, 'node_modules', '.bin', command));
}
