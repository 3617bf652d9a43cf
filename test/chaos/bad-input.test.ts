import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { badInputScenario } from '../../chaos/bad-input.js';
import { formatTable } from '../../chaos/report.js';
import { dbKinds } from '../helpers/db.js';
import { startHarness, type Harness } from '../helpers/harness.js';

// The short form of `npm run chaos`'s bad-input scenario: a few schema-derived samples per endpoint.
describe.each(dbKinds())('chaos, short form: bad input to every endpoint (%s)', (kind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness(kind);
  });
  afterAll(async () => h?.close());

  it('no answer ≥ 500, no refused write that changed anything, no redirect off the service', { timeout: 180_000 }, async () => {
    const r = await badInputScenario(h, { runsPerOperation: 3, seed: 42 });
    console.log(`${formatTable([r])}\n${r.notes.join('\n')}`);
    expect(r.notes, formatTable([r])).toEqual([]);
    expect(r.tried).toBeGreaterThan(200);
    expect({ serverErrors: r.serverErrors, partialWrites: r.partialWrites, openRedirects: r.openRedirects }).toEqual({
      serverErrors: 0,
      partialWrites: 0,
      openRedirects: 0,
    });
  });
});
