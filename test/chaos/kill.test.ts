import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killScenario } from '../../chaos/kill.js';
import { chaosSize, formatTable, recordResult } from '../../chaos/report.js';
import { DevChainFacilitator } from '../../service/payments/dev-chain/dev-facilitator.js';
import { DEV_RECIPIENT, DEV_SETTLER_KEY } from '../../service/payments/x402-config.js';
import { createEmptyPostgresDatabase, dbKinds } from '../helpers/db.js';

// The short form of `npm run chaos`'s kill scenario: a real process (`svc serve`) killed twice in the
// middle of paid calls, publishes and Table API inserts, restarted on the same database each time. The
// chain is this test's own, so it outlives every kill (as a real chain does).
describe.each(dbKinds())('chaos: SIGKILL mid-stream (%s)', (kind) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  let chain: DevChainFacilitator;
  beforeAll(async () => {
    chain = new DevChainFacilitator();
    await chain.start();
    cleanups.push(() => chain.close());
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('nothing acknowledged lost, no site half-written, every payment settled with its work or not at all, every usage count right', {
    timeout: chaosSize(240_000, 900_000),
  }, async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-kill-'));
    cleanups.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl = '';
    if (kind === 'postgres') {
      const db = await createEmptyPostgresDatabase();
      cleanups.push(db.drop);
      databaseUrl = db.url;
    }
    const env = {
      SVC_X402_MODE: 'chain',
      SVC_X402_RPC_URL: chain.rpcUrl,
      SVC_X402_SETTLER_KEY: DEV_SETTLER_KEY,
      SVC_X402_RECIPIENT: DEV_RECIPIENT,
    };
    const r = await killScenario({ databaseUrl, dataDir, env, chain }, { rounds: chaosSize(2, 6), killAfterMs: chaosSize(1_500, 4_000) });
    recordResult({ ...r, scenario: `${r.scenario} (${kind})` });
    console.log(formatTable([r]));
    expect(r.notes, formatTable([r])).toEqual([]);
    expect({ lost: r.lost, partialWrites: r.partialWrites, moneyErrors: r.moneyErrors, countErrors: r.countErrors }).toEqual({
      lost: 0,
      partialWrites: 0,
      moneyErrors: 0,
      countErrors: 0,
    });
    // The streams really ran: every kind of write was acknowledged before the kills.
    expect(r.load).toMatch(/: [1-9]\d* paid, [1-9]\d* published, [1-9]\d* inserted acknowledged/);
  });
});
