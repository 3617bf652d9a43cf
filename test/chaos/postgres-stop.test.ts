import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStopScenario } from '../../chaos/postgres-stop.js';
import { chaosSize, formatTable, recordResult } from '../../chaos/report.js';
import { startNode, type ServiceNode } from '../helpers/nodes.js';
import { postgresBinaries, startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.js';

// The short form of `npm run chaos`'s database scenario: a PostgreSQL server of this test's own
// (initdb, pg_ctl) stopped twice under a real node's traffic and started again.
const binaries = postgresBinaries();
if ('missing' in binaries) console.warn(`chaos, PostgreSQL stopped: skipped (${binaries.missing})`);

describe.skipIf('missing' in binaries)('chaos: PostgreSQL stopped under traffic', { timeout: chaosSize(180_000, 600_000) }, () => {
  let pg: PrivatePostgres;
  let node: ServiceNode;
  beforeAll(async () => {
    pg = await startPrivatePostgres();
    node = await startNode(pg.url, {
      SVC_X402_MODE: 'remote',
      SVC_X402_FACILITATOR_URL: 'http://127.0.0.1:9',
      SVC_X402_RECIPIENT: '0x000000000000000000000000000000000000dEaD',
      SVC_MAX_SITES_PER_ACCOUNT: '1000000',
    });
  });
  afterAll(async () => {
    await node?.stop();
    await pg?.close();
  });

  it('503 with Retry-After while it is down, writes again without a restart once it is back, nothing acknowledged lost', async () => {
    const r = await postgresStopScenario(pg, node, { downMs: chaosSize(2_000, 6_000), rounds: chaosSize(2, 4) });
    recordResult(r);
    console.log(formatTable([r]));
    expect(r.notes, formatTable([r])).toEqual([]);
    expect({ serverErrors: r.serverErrors, lost: r.lost, partialWrites: r.partialWrites }).toEqual({ serverErrors: 0, lost: 0, partialWrites: 0 });
    // The fault was felt: the database was really gone for a while.
    expect(r.load).toMatch(/[1-9]\d* × 503 while down$/);
  });
});
