import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badInputScenario } from '../../chaos/bad-input.js';
import { chaosSize, formatTable, recordResult } from '../../chaos/report.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// The short form of `npm run chaos`'s bad-input scenario: a few schema-derived samples per endpoint.
describe.each(dbKinds())('chaos: bad input to every endpoint (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  it('no answer ≥ 500, no refused write that changed anything, no redirect off the service', { timeout: 1_800_000 }, async () => {
    const r = await badInputScenario(h, { runsPerOperation: chaosSize(3, 30), seed: chaosSize(42, Date.now()) });
    recordResult({ ...r, scenario: `${r.scenario} (${kind})` });
    console.log(formatTable([r]));
    expect(r.notes, formatTable([r])).toEqual([]);
    expect(r.tried).toBeGreaterThan(200);
    expect({ serverErrors: r.serverErrors, partialWrites: r.partialWrites, openRedirects: r.openRedirects }).toEqual({
      serverErrors: 0,
      partialWrites: 0,
      openRedirects: 0,
    });
  });
});
