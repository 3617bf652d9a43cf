import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, rowsOf } from '../../service/db/client.js';
import { answerJson } from '../../service/tables/query.js';
import { dbKinds, openTestDatabase } from '../helpers/db.js';

// A page that shows some fields places each field's JSON as the database wrote it (answerJson,
// query.ts): it must be the bytes JSON.stringify writes, for every value a field can hold, written
// to jsonb as the service writes records (JSON.stringify) and read back as jsonb's text.
const VALUES: unknown[] = [
  'plain',
  '',
  'He said "hi" \\ back\\slash / slash',
  '\b\f\n\r\t \u0001 \u001f \u007f',
  '\u2028 \u2029 ü 🐈 中文',
  true,
  false,
  null,
  0,
  -0,
  1,
  -17,
  123.456,
  0.1 + 0.2,
  1e-6,
  9.99e-7,
  1e-7,
  -5e-324,
  999999999999999900000,
  1e21,
  -1.5e300,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  { a: 1, b: [true, null, 'x'] },
  [1, 2.5, 'three'],
  [],
  {},
];

describe.each(dbKinds())('answerJson: a field as jsonb wrote it, as JSON.stringify writes it (%s)', (kind) => {
  let database: Database;
  beforeAll(async () => {
    database = await openTestDatabase(kind);
  });
  afterAll(async () => database?.close());

  it.each(VALUES.map((v) => [JSON.stringify(v), v]))('%s', async (_, value) => {
    const [row] = rowsOf<{ json: string }>(await database.db.execute(sql`select (${JSON.stringify(value)}::jsonb)::text as json`));
    expect(answerJson(row!.json)).toBe(JSON.stringify(value));
  });
});
