import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaosSize, formatTable, recordResult } from '../../chaos/report.js';
import { slowlorisScenario } from '../../chaos/slowloris.js';
import { startNode, type ServiceNode } from '../helpers/nodes.js';

// The short form of `npm run chaos`'s slow-client scenario, on a real process (PGlite, no chain).
describe('chaos: slow clients (slowloris)', { timeout: 300_000 }, () => {
  let node: ServiceNode;
  beforeAll(async () => {
    node = await startNode('', {
      SVC_X402_MODE: 'remote',
      SVC_X402_FACILITATOR_URL: 'http://127.0.0.1:9',
      SVC_X402_RECIPIENT: '0x000000000000000000000000000000000000dEaD',
    });
  });
  afterAll(async () => node?.stop());

  it('500 connections dripping their headers do not stop ordinary requests, and the node stays up', async () => {
    const r = await slowlorisScenario(node, { clients: 500, normalRequests: chaosSize(40, 200), durationMs: chaosSize(6_000, 100_000) });
    recordResult(r);
    console.log(formatTable([r]));
    expect(r.notes, formatTable([r])).toEqual([]);
    expect(r.tried).toBe(chaosSize(40, 200));
    expect(r.serverErrors).toBe(0);
  });
});
