/**
 * Payments bench: what x402 adds to an Agent API call. Three ways to run the same action
 * (x402.update_app_file on an app of the paying wallet, same handler, same transaction):
 *   unpaid          the handler alone, wallet given (no payment machinery) — the reference
 *   paid, verify    a zero-price authorization: decode + EIP-712 recovery (viem) + nonce claim + receipt, no chain
 *   paid, settle    the real price: verify + balance/nonce read + transferWithAuthorization mined on the dev chain (anvil)
 * Sequential requests over loopback HTTP, PGlite; signatures are made before timing (client cost excluded).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { verifyTypedData, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { updateAppFile, createAppFromHtml } from '../shared/agent-api/actions/apps.js';
import { buildApp } from '../service/app.js';
import { agentHandlers } from '../service/agent-handlers.js';
import { loadConfig } from '../service/config.js';
import { decodePaymentHeader } from '../service/payments/decode-payment.js';
import { isDevFacilitator } from '../service/payments/facilitator.js';
import type { DevChainFacilitator } from '../service/payments/dev-chain/dev-facilitator.js';
import { transferAuthorizationTypedData, verifyPaymentOffline } from '../service/payments/verify-payment.js';
import { DEV_RECIPIENT } from '../service/payments/x402-config.js';
import { createRuntime } from '../cli/runtime.js';
import { signAuthorization, xPaymentHeader } from '../test/payments/helpers.js';

const N = Number(process.env.BENCH_PAYMENTS_N ?? 150);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function startService(env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-pay-'));
  let handler: (r: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: (r) => handler(r), port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = loadConfig({ SVC_DATA_DIR: dataDir, SVC_BASE_URL: url, SVC_LOG_LEVEL: 'silent', SVC_RATE_LIMIT_PER_MINUTE: '0', ...env });
  const runtime = await createRuntime(config);
  const app = buildApp(runtime.deps);
  // The reference: the very same handler without the payment machinery.
  const bench = new Hono();
  bench.post('/_bench/unpaid/:siteId/files', async (c) => {
    const wallet = c.req.header('x-bench-wallet')!;
    const handler = agentHandlers[updateAppFile.name]!;
    const input = updateAppFile.input.parse(await c.req.json());
    const call = { deps: runtime.deps, wallet, params: { siteId: c.req.param('siteId') }, input };
    const state = await handler.check?.(call);
    const work = await runtime.deps.db.transaction((tx) => handler.run({ ...call, tx, state }));
    return c.json({ ok: true, ...(work.result as object) });
  });
  bench.route('/', app);
  handler = bench.fetch;
  return {
    url,
    runtime,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await runtime.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function timeSeries(n: number, one: (i: number) => Promise<Response>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const res = await one(i);
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`request ${i} answered ${res.status}`);
    out.push(performance.now() - t);
  }
  return out;
}

/**
 * CPU time used from now until the returned function is called: this process (the service and the
 * bench's client) and the dev chain's anvil, a process of its own on the same cores (on a real chain
 * that work is not on the service's machine). Linux only for anvil (/proc); 0 elsewhere.
 */
function cpuMeter(facilitator: unknown): () => { self: number; chain: number } {
  const pid = (facilitator as { pid?: number }).pid; // DevChainFacilitator's anvil
  const chainMs = () => {
    try {
      const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS; // utime + stime
    } catch {
      return 0;
    }
  };
  const self = process.cpuUsage();
  const chain = chainMs();
  return () => {
    const used = process.cpuUsage(self);
    return { self: (used.user + used.system) / 1000, chain: chainMs() - chain };
  };
}

/** USER_HZ: the unit of /proc/<pid>/stat's CPU times (100 on Linux). */
const CLOCK_TICKS = 100;

/** Requests per second with `inFlight` requests kept in flight until `n` are done (all must succeed). */
async function throughput(n: number, inFlight: number, one: (i: number) => Promise<Response>): Promise<number> {
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < n) {
        const i = next++;
        const res = await one(i);
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`request ${i} answered ${res.status}`);
      }
    }),
  );
  return (n / (performance.now() - t)) * 1000;
}

export async function run(): Promise<void> {
  // update_app_file free on one node (verify only), priced on the other (verify + settle).
  const free = await startService({ SVC_X402_PRICES: JSON.stringify({ [updateAppFile.name]: '0' }), SVC_X402_PRICES_UPDATED_AT: '1' });
  const paid = await startService({});
  try {
    const dev = paid.runtime.deps.facilitator;
    if (!isDevFacilitator(dev)) throw new Error('bench needs the dev chain');
    const payer = privateKeyToAccount(generatePrivateKey());
    await dev.mint(payer.address, 10_000_000n);
    const freeDev = free.runtime.deps.facilitator;
    if (isDevFacilitator(freeDev)) await freeDev.mint(payer.address, 1_000_000n);
    const body = (i: number) => JSON.stringify({ path: `f/${i % 10}.txt`, content: `hello ${i}` });
    const json = { 'content-type': 'application/json' };

    // An app owned by the payer on each node (each node runs its own dev chain).
    const create = async (svc: typeof free) => {
      const h = xPaymentHeader(await signAuthorization(payer, { to: DEV_RECIPIENT, value: 7000n }));
      const r = await fetch(`${svc.url}${createAppFromHtml.path}`, {
        method: 'POST',
        headers: { ...json, ...h },
        body: JSON.stringify({ name: `bench-${Math.random().toString(36).slice(2, 8)}`, html: '<p>b</p>' }),
      });
      if (r.status !== 201) throw new Error(`create answered ${r.status}: ${await r.text()}`);
      return (await r.json()).app.appId as string;
    };
    const freeApp = await create(free);
    const paidApp = await create(paid);
    const wallet = payer.address.toLowerCase();

    const warm = 20;
    await timeSeries(warm, (i) =>
      fetch(`${free.url}/_bench/unpaid/${freeApp}/files`, { method: 'POST', headers: { ...json, 'x-bench-wallet': wallet }, body: body(i) }),
    );
    const unpaid = await timeSeries(N, (i) =>
      fetch(`${free.url}/_bench/unpaid/${freeApp}/files`, { method: 'POST', headers: { ...json, 'x-bench-wallet': wallet }, body: body(i) }),
    );

    const zeroHeaders = await Promise.all(
      Array.from({ length: N + warm }, () => signAuthorization(payer, { to: DEV_RECIPIENT, value: 0n }).then(xPaymentHeader)),
    );
    const filesPath = (id: string) => updateAppFile.path.replace(':siteId', id);
    await timeSeries(warm, (i) => fetch(`${free.url}${filesPath(freeApp)}`, { method: 'POST', headers: { ...json, ...zeroHeaders[N + i] }, body: body(i) }));
    const verifyOnly = await timeSeries(N, (i) =>
      fetch(`${free.url}${filesPath(freeApp)}`, { method: 'POST', headers: { ...json, ...zeroHeaders[i] }, body: body(i) }),
    );

    const paidHeaders = await Promise.all(Array.from({ length: N }, () => signAuthorization(payer, { to: DEV_RECIPIENT, value: 3000n }).then(xPaymentHeader)));
    const before = await dev.balanceOf(payer.address);
    const settled = await timeSeries(N, (i) =>
      fetch(`${paid.url}${filesPath(paidApp)}`, { method: 'POST', headers: { ...json, ...paidHeaders[i] }, body: body(i) }),
    );
    const spent = before - (await dev.balanceOf(payer.address));

    // Throughput with 32 calls in flight: the unpaid handler against paid + settled calls, in
    // interleaved rounds (this machine's speed moves between seconds); medians, and each round's ratio.
    const IN_FLIGHT = 32;
    const ROUNDS = 3;
    const unpaidRates: number[] = [];
    const paidRates: number[] = [];
    const unpaidUsed = { self: 0, chain: 0 };
    const paidUsed = { self: 0, chain: 0 };
    const add = (into: { self: number; chain: number }, used: { self: number; chain: number }) => {
      into.self += used.self;
      into.chain += used.chain;
    };
    const countsBefore = (dev as DevChainFacilitator).settlerCounts;
    for (let round = 0; round < ROUNDS; round++) {
      const unpaidCpu = cpuMeter(free.runtime.deps.facilitator);
      unpaidRates.push(
        await throughput(N, IN_FLIGHT, (i) =>
          fetch(`${free.url}/_bench/unpaid/${freeApp}/files`, { method: 'POST', headers: { ...json, 'x-bench-wallet': wallet }, body: body(i) }),
        ),
      );
      add(unpaidUsed, unpaidCpu());
      const concurrentHeaders = await Promise.all(
        Array.from({ length: N }, () => signAuthorization(payer, { to: DEV_RECIPIENT, value: 3000n }).then(xPaymentHeader)),
      );
      const paidCpu = cpuMeter(dev);
      paidRates.push(
        await throughput(N, IN_FLIGHT, (i) =>
          fetch(`${paid.url}${filesPath(paidApp)}`, { method: 'POST', headers: { ...json, ...concurrentHeaders[i] }, body: body(i) }),
        ),
      );
      add(paidUsed, paidCpu());
    }
    const countsAfter = (dev as DevChainFacilitator).settlerCounts;
    const unpaidRate = pct(unpaidRates, 50);
    const paidRate = pct(paidRates, 50);
    const spentAll = before - (await dev.balanceOf(payer.address));

    // The offline verifier alone (decode, the checks, the digest and libsecp256k1's recovery), in
    // process, interleaved with the reference: the same decode and viem's verifyTypedData (the check
    // it replaced).
    const verifierOnly: number[] = [];
    const viemVerify: number[] = [];
    for (const h of await Promise.all(Array.from({ length: N }, () => signAuthorization(payer, { to: DEV_RECIPIENT, value: 0n }).then(xPaymentHeader)))) {
      let t = performance.now();
      const attempt = decodePaymentHeader((n) => (h as Record<string, string>)[n])!;
      await verifyPaymentOffline(attempt, { amount: 0n, recipient: DEV_RECIPIENT, nowSeconds: Math.floor(Date.now() / 1000), maxTimeoutSeconds: 300 });
      verifierOnly.push(performance.now() - t);
      t = performance.now();
      const again = decodePaymentHeader((n) => (h as Record<string, string>)[n])!;
      const a = again.authorization;
      await verifyTypedData({ address: a.from as Address, ...transferAuthorizationTypedData(a), signature: again.signature });
      viemVerify.push(performance.now() - t);
    }

    const rows: [string, number[]][] = [
      ['unpaid (same handler, reference)', unpaid],
      ['paid, verify only (zero-value proof)', verifyOnly],
      ['paid, verify + settle (dev chain)', settled],
      ['(offline verifier alone, in-process)', verifierOnly],
      ['(ref: decode + viem verifyTypedData)', viemVerify],
    ];
    const p50ref = pct(unpaid, 50);
    const p95ref = pct(unpaid, 95);
    console.log(
      `x402.update_app_file, ${N} sequential requests each, loopback, PGlite, anvil dev chain; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} cores`,
    );
    console.log(`${'mode'.padEnd(40)} ${'p50 ms'.padStart(8)} ${'p95 ms'.padStart(8)} ${'+p50 ms'.padStart(9)} ${'+p95 ms'.padStart(9)}`);
    for (const [label, xs] of rows) {
      const p50 = pct(xs, 50);
      const p95 = pct(xs, 95);
      console.log(
        `${label.padEnd(40)} ${p50.toFixed(2).padStart(8)} ${p95.toFixed(2).padStart(8)} ${(p50 - p50ref).toFixed(2).padStart(9)} ${(p95 - p95ref).toFixed(2).padStart(9)}`,
      );
    }
    console.log(`settled ${N} payments: payer spent ${spent} atomic USDC (expected ${BigInt(N) * 3000n})`);
    const roundRatios = paidRates.map((r, i) => (r / unpaidRates[i]!).toFixed(2)).join(' ');
    console.log(
      `${IN_FLIGHT} in flight, ${N} calls per round, median of ${ROUNDS} interleaved rounds: unpaid ${unpaidRate.toFixed(0)} calls/s, paid + settled ${paidRate.toFixed(0)} calls/s (${(paidRate / unpaidRate).toFixed(2)}x, rounds ${roundRatios}; goal ≥ 0.5x); all ${(ROUNDS + 1) * N} payments spent ${spentAll} (expected ${BigInt((ROUNDS + 1) * N) * 3000n})`,
    );
    const turns = countsAfter.turns - countsBefore.turns;
    const sent = countsAfter.sent - countsBefore.sent;
    console.log(`settler: ${sent} transactions in ${turns} turns of its sends (${(sent / Math.max(1, turns)).toFixed(1)} a turn), ${IN_FLIGHT} in flight`);
    const perCall = (ms: number) => (ms / (ROUNDS * N)).toFixed(1);
    console.log(
      `CPU per call (ms): unpaid: this process ${perCall(unpaidUsed.self)}; paid + settled: this process ${perCall(paidUsed.self)} (service, and the bench's client), dev chain (anvil, a process of its own) ${perCall(paidUsed.chain)}`,
    );
  } finally {
    await free.close();
    await paid.close();
  }
}

if (process.argv[1]?.endsWith('payments.ts') && !process.argv[1].includes('run.ts')) {
  void run();
}
