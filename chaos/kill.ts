import { sql } from 'drizzle-orm';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { createRuntime } from '../cli/runtime.js';
import { runAdminOperation } from '../service/admin/operations.js';
import { loadConfig } from '../service/config.js';
import { type Db, rowsOf } from '../service/db/client.js';
import { checkCounters } from '../service/db/counters.js';
import type { DevChainFacilitator } from '../service/payments/dev-chain/dev-facilitator.js';
import { DEV_RECIPIENT } from '../service/payments/x402-config.js';
import { startNode, type ServiceNode } from '../test/helpers/nodes.js';
import { html, jsonInit, payV1 } from '../test/payments/helpers.js';
import { type Acked, accountWithTable, checkAcked, kill, REQUEST_TIMEOUT_MS, type TableTarget } from './fixtures.js';
import { emptyResult, type ScenarioResult } from './report.js';

/** Where the killed node keeps its state: the same database (PostgreSQL URL, or '' for PGlite in `dataDir`) at every restart. */
export interface KillSetup {
  databaseUrl: string;
  dataDir: string;
  /** The node's environment: a chain this scenario does not own (SVC_X402_MODE=chain…), S3 if any. */
  env: Record<string, string>;
  chain: DevChainFacilitator;
}

/**
 * SIGKILL in the middle of three write streams (paid create_app calls through the x402 v1 client,
 * Account API publishes, Table API inserts), `rounds` times, restarting the node on the same database
 * each time. After each restart every acknowledged write must be there and every site whole; at the
 * end reconcile runs (its report is in `info`) and every payment must be settled with its work or
 * not settled without it, with the payer's and the recipient's balances moved by exactly the
 * settled payments, and every kept usage count (records, files, bytes, sites, Tables) equal to a
 * count(*) over the data.
 */
export async function killScenario(setup: KillSetup, options: { rounds: number; killAfterMs: number }): Promise<ScenarioResult> {
  const result = emptyResult('SIGKILL mid-stream', `SIGKILL ${options.rounds}× after ${options.killAfterMs} ms of writes, restart on the same database`);
  const payer = privateKeyToAccount(generatePrivateKey());
  await setup.chain.mint(payer.address, 1_000_000_000n);
  const payerStart = await setup.chain.balanceOf(payer.address);
  const recipientStart = await setup.chain.balanceOf(DEV_RECIPIENT);
  const acked: Acked = { publishes: [], records: [], apps: [] };
  // Streams of creates run for as long as the scenario lasts: no site quota stops them.
  const start = () => startNode(setup.databaseUrl, { SVC_MAX_SITES_PER_ACCOUNT: '1000000', ...setup.env, SVC_DATA_DIR: setup.dataDir });

  let node = await start();
  const { key, table } = await accountWithTable(node);
  let requests = 0;
  try {
    for (let round = 0; round < options.rounds; round++) {
      const streams = writeStreams(node, round, { key, table, pay: payV1(payer), acked });
      await new Promise((r) => setTimeout(r, options.killAfterMs));
      await kill(node);
      requests += await streams;
      node = await start();
      await checkAcked(node, key, acked, result);
    }
  } finally {
    await kill(node);
  }
  result.load = `${requests} writes in 3 streams (paid create_app, publish, Table API insert): ${acked.apps.length} paid, ${acked.publishes.length} published, ${acked.records.length} inserted acknowledged`;
  await checkMoney(setup, payer.address, { payerStart, recipientStart }, result);
  return result;
}

/** Runs the three streams until the node stops answering; resolves with the number of requests sent. */
async function writeStreams(node: ServiceNode, round: number, s: { key: string; table: TableTarget; pay: typeof fetch; acked: Acked }): Promise<number> {
  let sent = 0;
  const loop = async (one: (i: number) => Promise<void>) => {
    for (let i = 0; ; i++) {
      sent++;
      try {
        await one(i);
      } catch {
        return; // the node is gone
      }
    }
  };
  const timeout = () => AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  await Promise.all([
    loop(async (i) => {
      const res = await s.pay(`${node.url}/api/x402/apps`, {
        ...jsonInit('POST', { name: `kill-${round}-${i}-${Date.now()}`, html: html(`paid ${round}.${i}`) }),
        signal: timeout(),
      });
      const body = await res.json();
      if (res.status === 201) s.acked.apps.push({ appId: body.app.appId, pathUrl: new URL(body.app.pathUrl).pathname });
    }),
    loop(async (i) => {
      const res = await fetch(`${node.url}/api/v1/sites`, {
        ...jsonInit('POST', { requestId: `kill-${round}-${i}`, html: html(`published ${round}.${i}`) }, { authorization: `Bearer ${s.key}` }),
        signal: timeout(),
      });
      const body = await res.json();
      if (res.status === 201) s.acked.publishes.push({ id: body.site.id, pathUrl: new URL(body.site.pathUrl).pathname });
    }),
    loop(async (i) => {
      const res = await fetch(`${node.url}${s.table.pathUrl}`, {
        ...jsonInit('POST', { record: { n: round * 1_000_000 + i } }, { 'x-svc-write-key': s.table.writeKey }),
        signal: timeout(),
      });
      const body = await res.json();
      if (res.status === 201) s.acked.records.push({ path: `${s.table.pathUrl}/${body.record.id}` });
    }),
  ]);
  return sent;
}

/** Reconciles (in-process, on the node's database), checks every payment of the payer against the chain, then the kept usage counts. */
async function checkMoney(setup: KillSetup, payer: string, before: { payerStart: bigint; recipientStart: bigint }, result: ScenarioResult): Promise<void> {
  const runtime = await createRuntime(
    loadConfig({ ...process.env, ...setup.env, DATABASE_URL: setup.databaseUrl, SVC_DATA_DIR: setup.dataDir, SVC_LOG_LEVEL: 'error' }),
  );
  try {
    const report = await runAdminOperation(runtime.deps, 'x402.reconcile', { graceMs: 0 });
    result.info.push(`reconcile: ${JSON.stringify(report)}`);
    const wallet = payer.toLowerCase();
    const rows = rowsOf<{ nonce: string; status: string; amount: string }>(
      await runtime.deps.db.execute(sql`select nonce, status, amount from x402_payments where lower(payer) = ${wallet}`),
    );
    const withWork = new Set(
      rowsOf<{ payer_nonce: string }>(await runtime.deps.db.execute(sql`select payer_nonce from x402_receipts where lower(wallet) = ${wallet}`)).map((r) =>
        r.payer_nonce.toLowerCase(),
      ),
    );
    let settled = 0n;
    let collected = 0;
    const statuses: Record<string, number> = {};
    for (const row of rows) {
      statuses[row.status] = (statuses[row.status] ?? 0) + 1;
      const used = await setup.chain.authorizationUsed(payer, row.nonce);
      const work = withWork.has(`${wallet}:${row.nonce.toLowerCase()}`);
      if (used) {
        settled += BigInt(row.amount);
        collected++;
      }
      const wrong = used && !work ? 'settled without its work' : work && !used ? `work done, payment not collected (row ${row.status})` : undefined;
      if (wrong) {
        result.moneyErrors++;
        if (result.notes.length < 8) result.notes.push(`payment ${row.nonce.slice(0, 10)}…: ${wrong}`);
      }
    }
    result.info.push(`payments by status after reconcile: ${JSON.stringify(statuses)}`);
    result.tried += rows.length;
    const paid = before.payerStart - (await setup.chain.balanceOf(payer));
    const received = (await setup.chain.balanceOf(DEV_RECIPIENT)) - before.recipientStart;
    if (paid !== settled || received !== settled) {
      result.moneyErrors++;
      result.notes.push(`balances: payer paid ${paid}, recipient received ${received}, settled payments total ${settled}`);
    }
    result.info.push(`money: ${rows.length} payments, ${collected} collected (${settled} atomic), balances agree`);
    await checkCounts(runtime.deps.db, result);
  } finally {
    await runtime.close();
  }
}

/** Every kept usage count against count(*) / sum(size) over what the killed node left (service/db/counters.ts). */
export async function checkCounts(db: Db, result: ScenarioResult): Promise<void> {
  const wrong = await checkCounters(db);
  const [kept] = rowsOf<{ n: string | number }>(await db.execute(sql`select count(distinct (subject, metric)) as n from usage_counters`));
  result.countErrors += wrong.length;
  for (const w of wrong.slice(0, 4)) result.notes.push(`count ${w.metric} of ${w.subject}: kept ${w.kept}, the data has ${w.actual}`);
  result.info.push(`usage counts: ${Number(kept?.n ?? 0)} kept counts compared with count(*), ${wrong.length} wrong`);
}
