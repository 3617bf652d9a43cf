import type { ServiceNode } from '../test/helpers/nodes.js';
import type { PrivatePostgres } from '../test/helpers/private-postgres.js';
import { html, jsonInit } from '../test/payments/helpers.js';
import { type Acked, accountWithTable, checkAcked, REQUEST_TIMEOUT_MS, type TableTarget } from './fixtures.js';
import { emptyResult, type ScenarioResult } from './report.js';

/** What a 201 of the streams holds. */
type Created = { site?: { id: string; pathUrl: string }; record?: { id: string } };

/** One answer (or none) the traffic got, and when. */
interface Outcome {
  at: number;
  what: string;
  status: number | 'no answer';
  retryAfter: string | null;
  error?: string;
}

/**
 * PostgreSQL stops (`immediate`: a crash as the server sees it) under mixed traffic (publishes, Table
 * API inserts and reads) and starts again `downMs` later. While it is down every answer ≥ 500 must be
 * 503 with Retry-After, none may hang past 10 s; after it is back the node must serve writes again
 * without a restart, stay alive, and have lost nothing it acknowledged.
 */
export async function postgresStopScenario(pg: PrivatePostgres, node: ServiceNode, options: { downMs: number; rounds: number }): Promise<ScenarioResult> {
  const result = emptyResult(
    'PostgreSQL stopped',
    `PostgreSQL stopped (immediate) ${options.rounds}× for ${(options.downMs / 1000).toFixed(1)} s under traffic, then started`,
  );
  const { key, table } = await accountWithTable(node);
  const acked: Acked = { publishes: [], records: [], apps: [] };
  const outcomes: Outcome[] = [];
  const recoveries: number[] = [];
  let running = true;
  const traffic = mixedTraffic(node, { key, table, acked, outcomes, running: () => running });
  try {
    for (let round = 0; round < options.rounds; round++) {
      await sleep(1_000);
      await pg.stop('immediate');
      await sleep(options.downMs);
      await pg.start();
      const back = Date.now();
      // Recovery: the first write acknowledged after the database is back.
      while (!outcomes.some((o) => o.at > back && o.what !== 'read' && o.status === 201) && Date.now() - back < 30_000) await sleep(50);
      recoveries.push(Date.now() - back);
    }
  } finally {
    running = false;
    await traffic;
  }
  judge(outcomes, recoveries, result);
  if (node.child.exitCode !== null || node.child.signalCode !== null) {
    result.serverErrors++;
    result.notes.push(`the node died (exit ${node.child.exitCode ?? node.child.signalCode}); its log:\n${node.log().slice(-2000)}`);
    return result;
  }
  await checkAcked(node, key, acked, result);
  return result;
}

function judge(outcomes: Outcome[], recoveries: number[], result: ScenarioResult): void {
  const note = (s: string) => {
    if (result.notes.length < 8) result.notes.push(s);
  };
  const by = (status: Outcome['status']) => outcomes.filter((o) => o.status === status).length;
  for (const o of outcomes) {
    result.tried++;
    if (o.status === 'no answer') {
      result.serverErrors++;
      note(`${o.what}: no answer (${o.error})`);
    } else if (o.status >= 500 && (o.status !== 503 || !o.retryAfter)) {
      result.serverErrors++;
      note(`${o.what}: ${o.status}${o.retryAfter ? '' : ' without Retry-After'}`);
    }
  }
  for (const ms of recoveries) {
    if (ms >= 30_000) {
      result.serverErrors++;
      note('no write succeeded within 30 s of the database coming back');
    }
  }
  const others = outcomes.length - by(201) - by(200) - by(503);
  result.load = `${outcomes.length} requests in 3 streams (publish, Table API insert, Table API read): ${by(201) + by(200)} answered, ${by(503)} × 503 while down${others ? `, ${others} other` : ''}`;
  result.info.push(`recovery after the database came back (first acknowledged write): ${recoveries.map((ms) => `${ms} ms`).join(', ')}`);
}

/** Publishes, inserts and reads, each in its own loop, until `running()` turns false. */
async function mixedTraffic(
  node: ServiceNode,
  s: { key: string; table: TableTarget; acked: Acked; outcomes: Outcome[]; running: () => boolean },
): Promise<void> {
  const loop = async (what: string, one: (i: number) => Promise<Response>, ack: (body: Created) => void) => {
    for (let i = 0; s.running(); i++) {
      const at = Date.now();
      try {
        const res = await one(i);
        const body = (await res.json().catch(() => ({}))) as Created;
        s.outcomes.push({ at, what, status: res.status, retryAfter: res.headers.get('retry-after') });
        if (res.status === 201) ack(body);
        else if (res.status >= 500) await sleep(100); // as a client honouring Retry-After would, only faster
      } catch (e) {
        s.outcomes.push({ at, what, status: 'no answer', retryAfter: null, error: `${(e as Error).message} ${((e as Error).cause as Error)?.message ?? ''}` });
        await sleep(100);
      }
    }
  };
  const signal = () => AbortSignal.timeout(REQUEST_TIMEOUT_MS);
  await Promise.all([
    loop(
      'publish',
      (i) =>
        fetch(`${node.url}/api/v1/sites`, {
          ...jsonInit('POST', { requestId: `pg-${i}`, html: html(`p${i}`) }, { authorization: `Bearer ${s.key}` }),
          signal: signal(),
        }),
      (body) => s.acked.publishes.push({ id: body.site!.id, pathUrl: new URL(body.site!.pathUrl).pathname }),
    ),
    loop(
      'insert',
      (i) => fetch(`${node.url}${s.table.pathUrl}`, { ...jsonInit('POST', { record: { n: i } }, { 'x-svc-write-key': s.table.writeKey }), signal: signal() }),
      (body) => s.acked.records.push({ path: `${s.table.pathUrl}/${body.record!.id}` }),
    ),
    loop(
      'read',
      () => fetch(`${node.url}${s.table.pathUrl}?sort=-n&limit=5`, { signal: signal() }),
      () => {},
    ),
  ]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
