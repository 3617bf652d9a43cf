import fs from 'node:fs';
import type { DbOrTx } from '../service/db/client.js';
import { AddressLimiter } from '../service/http/address-limits.js';
import { DEFAULT_ADDRESS_LIMITS } from '../service/http/address-surfaces.js';
import { ADDRESS_SURFACES } from '../service/kernel/config.js';
import { benchServiceEnv, cliPersonalKey, formatRatio, interleavedLoads, load, printTable, spawnService, waitForHttp } from './lib.js';

/**
 * What the per-address limits cost on the hot paths (docs/public-operation.md): the same routes on
 * two svc processes (PGlite) that differ only in SVC_ADDRESS_LIMITS: every surface counted with a
 * limit no bench reaches (each request is counted and a sync runs as in production), and every
 * surface off. Routes: a Table API read (the fast path) and the Agent API's free pricing document.
 * BENCH_LIMITS_ROUNDS (default 3; 0 = only the first figure) interleaved rounds of 5 s each, 32
 * connections, medians. First, the CPU a request spends being counted: `take` alone, in process.
 */
const ROUNDS = Number(process.env.BENCH_LIMITS_ROUNDS ?? 3);
const SECONDS = 5;
const CONNECTIONS = 32;
const UNREACHED = 1_000_000_000;

export async function run(): Promise<void> {
  countingCost();
  if (ROUNDS <= 0) return;
  const on = await benchServiceEnv('limits-on', { SVC_ADDRESS_LIMITS: ADDRESS_SURFACES.map((s) => `${s}=${UNREACHED}`).join(',') });
  const off = await benchServiceEnv('limits-off', { SVC_ADDRESS_LIMITS: ADDRESS_SURFACES.map((s) => `${s}=0`).join(','), SVC_MCP_PORT: 'off' });
  on.env.SVC_MCP_PORT = 'off';
  const keys = [cliPersonalKey(on.env), cliPersonalKey(off.env)];
  const services = [spawnService(on.env), spawnService(off.env)];
  try {
    await Promise.all([waitForHttp(`${on.base}/healthz`), waitForHttp(`${off.base}/healthz`)]);
    const [tableOn, tableOff] = await Promise.all([smallTable(on.base, keys[0]!), smallTable(off.base, keys[1]!)]);
    for (const url of [`${on.base}${tableOn}`, `${off.base}${tableOff}`]) await load('warmup', url, { seconds: 2, connections: CONNECTIONS });
    const options = { connections: CONNECTIONS, seconds: SECONDS };
    const targets = [
      { label: 'Table API read, limited', url: `${on.base}${tableOn}?limit=20`, options },
      { label: 'Table API read, no limit', url: `${off.base}${tableOff}?limit=20`, options },
      { label: 'GET /api/x402/pricing, limited', url: `${on.base}/api/x402/pricing`, options },
      { label: 'GET /api/x402/pricing, no limit', url: `${off.base}/api/x402/pricing`, options },
    ];
    const measured = await interleavedLoads(targets, ROUNDS);
    printTable(
      `Per-address limits on and off, ${CONNECTIONS} connections from one address, ${ROUNDS} interleaved rounds of ${SECONDS} s, medians; PGlite`,
      measured.medians,
    );
    console.log(`Table API read: limited / no limit ${formatRatio(measured.ratio('Table API read, limited', 'Table API read, no limit'))}`);
    console.log(`pricing: limited / no limit ${formatRatio(measured.ratio('GET /api/x402/pricing, limited', 'GET /api/x402/pricing, no limit'))}`);
  } finally {
    for (const svc of services) {
      svc.kill('SIGTERM');
      await new Promise((r) => svc.once('exit', r));
    }
    for (const dir of [on.dir, off.dir]) fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** A site with a public table of 200 records; returns the table's path. */
async function smallTable(base: string, key: string): Promise<string> {
  const api = async (p: string, body: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => {
    const res = await fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    if (res.status !== 201 && res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const { site } = await api('/api/v1/sites', { requestId: 'limits', html: '<h1>limits</h1>', slug: 'limits' });
  const { table } = await api(`/api/v1/sites/${site.id}/tables`, { name: 'Items', schema: { fields: [{ name: 'name', label: 'Name', type: 'string' }] } });
  const tablePath = new URL(table.pathUrl).pathname;
  await api(tablePath, { records: Array.from({ length: 200 }, (_, i) => ({ name: `item ${i}` })) }, { 'x-svc-write-key': table.writeKey });
  return tablePath;
}

/** The in-memory counting of one request (`AddressLimiter.take`), over 10,000 addresses: no sync is reached. */
function countingCost(): void {
  const limiter = new AddressLimiter(null as unknown as DbOrTx, { now: () => new Date() }, { ...DEFAULT_ADDRESS_LIMITS, 'table-read': UNREACHED });
  const addresses = Array.from({ length: 10_000 }, (_, i) => `198.51.${i >> 8}.${i & 255}`);
  const calls = 2_000_000;
  for (let i = 0; i < 200_000; i++) limiter.take('table-read', addresses[i % addresses.length]!);
  // CPU time, not wall time: on a shared machine the process is descheduled now and then.
  const started = process.cpuUsage();
  for (let i = 0; i < calls; i++) limiter.take('table-read', addresses[i % addresses.length]!);
  const used = process.cpuUsage(started);
  const ns = ((used.user + used.system) * 1000) / calls;
  console.log(`counting one request in memory (AddressLimiter.take, 10,000 addresses): ${ns.toFixed(0)} ns of CPU`);
}
