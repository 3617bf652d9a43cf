import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { csvRecordChunks, scanCsvForCopy } from '../../service/datasets/parsers/csv-scan.js';
import { inferSchema, prepareDataFile } from '../../service/datasets/pipeline.js';
import { DEFAULT_PARSE_LIMITS } from '../../service/datasets/records.js';

/**
 * The CSV fast path's scan must infer exactly what the papaparse path infers (it replaces pass one
 * for the files it accepts), and must refuse every file where PostgreSQL's CSV reader and papaparse
 * could see different rows or cells, or where papaparse would report an error.
 */

const limits = { ...DEFAULT_PARSE_LIMITS, maxColumns: 100 };

/** A stream of `bytes` in small chunks, so records and quotes straddle chunk boundaries. */
function stream(bytes: Buffer, chunk = 7): Readable {
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += chunk) parts.push(bytes.subarray(i, i + chunk));
  return Readable.from(parts);
}

async function papaparseSchema(bytes: Buffer) {
  const file = await prepareDataFile(async () => Readable.from([bytes]), 'csv', { limits });
  try {
    const s = await inferSchema(file, limits);
    return { fields: s.fields, records: s.records };
  } finally {
    await file.close();
  }
}

async function scanSchema(bytes: Buffer, chunk?: number) {
  const plan = await scanCsvForCopy(stream(bytes, chunk), limits);
  return plan && { fields: plan.schema.fields, records: plan.schema.records, delimiter: plan.delimiter, header: plan.header, complete: plan.complete };
}

const accepted: [string, string | Buffer][] = [
  [
    'plain, every type',
    'id,name,price,active,day,at,zip\n1,Ann,1.5,true,2024-02-29,2024-01-01T10:00:00Z,00501\n2,Bob,-3,FALSE,2023-12-31,2024-01-01 10:00+02:00,10001\n',
  ],
  ['quoted cells with delimiters, newlines and escaped quotes', 'a,b\n"x, y","line 1\nline 2"\n"say ""hi""",2\n""," 7 "\n'],
  ['CRLF line ends, no final line end', 'a,b\r\n1,2\r\n3,"4\r\n5"'],
  ['UTF-8 BOM and accents in the header', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('Città,Größe\nRoma,3\nZürich,1e3\n')])],
  ['semicolons', 'a;b;c\n1;2,5;x\n4;5;y\n'],
  ['tabs', 'a\tb\n1\t2\n3\t4\n'],
  ['pipes', 'a|b\n1|2\n3|4\n'],
  ['a numeric first row is data', '1,2,3\n4,5,6\n'],
  ['empty and quoted-empty cells are null; all-null column is a string', 'a,b,c\n1,,""\n,2,\n'],
  ['integers past 2^53 and leading zeros stay strings', 'big,lead,small\n9007199254740993,007,1\n1,1,2\n'],
  ['numbers with exponents, signs and spaces', 'x,y\n+1,.5\n -2 ,1e-3\n3,4.\n'],
  ['dates widen to datetimes, integers to numbers, mixtures to strings', 'd,n,m\n2024-01-01,1,1\n2024-01-02T03:04:05.678Z,2.5,x\n'],
  ['duplicate and empty header names', 'a,a,,id\n1,2,3,4\n'],
  ['impossible dates are strings', 'd\n2023-02-29\n'],
  ['booleans in any case', 'b\nTrue\nfALSE\n'],
];

const refused: [string, string | Buffer][] = [
  ['a blank line (papaparse skips it; COPY would not)', 'a,b\n1,2\n\n3,4\n'],
  ['a whitespace-only line', 'a,b\n1,2\n   \n3,4\n'],
  ['trailing empty cells (papaparse drops them)', 'a,b\n1,2,\n'],
  ['too few cells (an error papaparse names)', 'a,b\n1\n'],
  ['too many cells', 'a,b\n1,2,3\n'],
  ['a quote inside a cell', 'a,b\n1,x"y\n'],
  ['text after a closing quote', 'a,b\n1,"x"y\n'],
  ['an unterminated quote', 'a,b\n1,"x\n'],
  ['a bare CR line end', 'a,b\r1,2\r'],
  ['mixed line ends', 'a,b\r\n1,2\n3,4\r\n'],
  ['Windows-1252 text', Buffer.from('name,n\nZ\xfcrich,1\n', 'latin1')],
  ['a header only', 'a,b\n'],
  ["COPY's end-of-data marker in a one-column file", 'a\n1\n\\.\n2\n'],
  ['a BOM before a numeric first row', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('1,2\n3,4\n')])],
  ['a header cell with a line break', 'a,"b\nc"\n1,2\n'],
];

describe('CSV fast path: the scan', () => {
  for (const [label, text] of accepted) {
    it(`infers what papaparse infers: ${label}`, async () => {
      const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
      const expected = await papaparseSchema(bytes);
      for (const chunk of [1, 7, 1 << 16]) {
        const got = await scanSchema(bytes, chunk);
        expect(got, `chunk ${chunk}`).not.toBeNull();
        expect({ fields: got!.fields, records: got!.records }).toEqual(expected);
        expect(got!.complete).toBe(true);
      }
    });
  }

  it('names the delimiter and whether the first row is a header', async () => {
    expect(await scanSchema(Buffer.from('a;b;c\n1;2;3\n4;5;6\n'))).toMatchObject({ delimiter: ';', header: true, records: 2 });
    expect(await scanSchema(Buffer.from('1\t2\t3\n4\t5\t6\n7\t8\t9\n'))).toMatchObject({ delimiter: '\t', header: false, records: 3 });
  });

  for (const [label, text] of refused) {
    it(`leaves to papaparse: ${label}`, async () => {
      const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text);
      expect(await scanSchema(bytes)).toBeNull();
      expect(await scanSchema(bytes, 1)).toBeNull();
    });
  }

  it('leaves to papaparse a row longer than the record limit, even in a text column', async () => {
    const bytes = Buffer.from(`a,b\n1,${'x'.repeat(300)}\n`);
    expect(await scanCsvForCopy(Readable.from([bytes]), { ...limits, maxRecordBytes: 200 })).toBeNull();
    expect(await scanCsvForCopy(Readable.from([bytes]), { ...limits, maxRecordBytes: 400 })).not.toBeNull();
  });

  it('a sample is a guess (complete: false) that the whole file may widen', async () => {
    const head = `n,s\n${Array.from({ length: 40_000 }, (_, i) => `${i},${i}`).join('\n')}`;
    const bytes = Buffer.from(`${head}\n1.5,x\n`);
    const sample = await scanCsvForCopy(stream(bytes, 4096), limits, { sampleBytes: 64 * 1024 });
    expect(sample!.complete).toBe(false);
    expect(sample!.schema.fields.map((f) => f.type)).toEqual(['integer', 'integer']);
    expect(sample!.schema.records).toBeLessThan(40_000);
    const whole = await scanCsvForCopy(stream(bytes, 4096), limits);
    expect(whole!.complete).toBe(true);
    expect(whole!.schema.fields.map((f) => f.type)).toEqual(['number', 'string']);
    expect(whole!.schema.records).toBe(40_001);
    expect(whole!.schema).toEqual({ ...(await papaparseSchema(bytes)), nameOf: whole!.schema.nameOf });
  });

  it('cuts chunks only between records, never inside quotes', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => `${i},"a\nb ""${i}"" ${'x'.repeat(i % 50)}"`);
    const bytes = Buffer.from(`n,s\n${rows.join('\n')}\n`);
    const chunks: Buffer[] = [];
    for await (const c of csvRecordChunks(stream(bytes, 333), 1000)) chunks.push(c);
    expect(chunks.length).toBeGreaterThan(10);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    for (const c of chunks) {
      expect(c[c.length - 1]).toBe(0x0a);
      expect(c.toString().split('"').length % 2).toBe(1); // an even number of quotes: none left open
    }
  });
});
