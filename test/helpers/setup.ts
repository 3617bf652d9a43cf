import { expect } from 'vitest';
import { guardPoolNesting } from './pool-nesting.js';

/**
 * Bytes compare as bytes. vitest's `toEqual` walks a Buffer or Uint8Array element by element through
 * its generic equality (~8 s of CPU for a 2 MB file); two byte arrays are equal when they hold the same
 * bytes, which `Buffer.compare` answers at once. A mismatch still fails with vitest's diff.
 */
expect.addEqualityTesters([
  function sameBytes(a: unknown, b: unknown) {
    if (!(a instanceof Uint8Array) || !(b instanceof Uint8Array)) return undefined;
    if (a.constructor !== b.constructor) return undefined;
    return Buffer.compare(a, b) === 0;
  },
]);

/** A query on a PostgreSQL pool inside a transaction of that pool fails the test (test/helpers/pool-nesting.ts). */
guardPoolNesting();
