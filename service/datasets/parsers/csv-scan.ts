import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import { schemaOf, typeOfValue, validDate, widen, type FieldType, type InferredSchema } from '../infer.js';
import type { ParseLimits } from '../records.js';
import { CSV_DELIMITERS, HEADER_SNIFF_BYTES, isNumericHeader, uniqueLabels } from './csv.js';

/**
 * The CSV fast path's first pass: reads the file's bytes once and infers the schema exactly as the
 * papaparse path would (same header rule, same type rules, every record), and at the same time
 * proves that PostgreSQL's own CSV reader (COPY … FORMAT csv) will see the same rows and cells. Then
 * the conversion hands the raw bytes to COPY: the database parses them, as fast as a COPY can be.
 *
 * The proof is conservative: anything where the two readers could differ, or where the papaparse
 * path would say something (an error with its row and line, a skipped blank line, trailing empty
 * cells), answers `null`, and the conversion takes the papaparse path for the whole file. Only plain
 * RFC 4180 files pass: UTF-8, a header row (or a numeric first row, without BOM), `"` quotes that
 * open a cell and close it before a delimiter or line end, one kind of line end (LF or CRLF), no
 * blank lines, every row with the header's number of cells.
 */

export interface CsvCopyPlan {
  /** Over every record, or (complete: false) over the records of a sample of the file. */
  schema: InferredSchema;
  complete: boolean;
  /** The delimiter (`,` `;` tab `|`), as papaparse guessed it. */
  delimiter: string;
  /** The first row is a header (COPY skips it); false when it is data (`column_1…`). */
  header: boolean;
}

/** Type codes: a column's type as a byte (TYPES[code]); NONE = no value seen yet. */
const NONE = 0;
const INTEGER = 1;
const NUMBER = 2;
const BOOLEAN = 3;
const DATE = 4;
const STRING = 6;
const TYPES: (FieldType | null)[] = [null, 'integer', 'number', 'boolean', 'date', 'datetime', 'string'];
const CODES = new Map<FieldType | null, number>(TYPES.map((t, i) => [t, i]));

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
const DOT = 0x2e;

class Fallback extends Error {}
const fallback = (): never => {
  throw new Fallback();
};

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * The type of a cell from its bytes for the common shapes (integers, plain decimals, true/false,
 * YYYY-MM-DD); -1 means "decode it and ask typeOfValue", which is the rule itself.
 */
function classifyBytes(b: Buffer, s: number, e: number): number {
  let i = s;
  let c = b[i]!;
  if (c === 0x2d || c === 0x2b) {
    if (++i === e) return -1;
    c = b[i]!;
  }
  if (isDigit(c)) {
    const ds = i;
    while (i < e && isDigit(b[i]!)) i++;
    const nd = i - ds;
    const leadingZero = nd > 1 && b[ds] === 0x30;
    if (i === e) return leadingZero || nd > 15 ? STRING : INTEGER;
    if (b[i] === DOT && !leadingZero && e - s < 300) {
      const fs = ++i;
      while (i < e && isDigit(b[i]!)) i++;
      if (i === e && i > fs) return NUMBER;
      return -1;
    }
    if (
      ds === s &&
      nd === 4 &&
      e - s === 10 &&
      b[s + 4] === 0x2d &&
      b[s + 7] === 0x2d &&
      isDigit(b[s + 5]!) &&
      isDigit(b[s + 6]!) &&
      isDigit(b[s + 8]!) &&
      isDigit(b[s + 9]!)
    ) {
      const y = (b[s]! - 48) * 1000 + (b[s + 1]! - 48) * 100 + (b[s + 2]! - 48) * 10 + (b[s + 3]! - 48);
      return validDate(y, (b[s + 5]! - 48) * 10 + (b[s + 6]! - 48), (b[s + 8]! - 48) * 10 + (b[s + 9]! - 48)) ? DATE : STRING;
    }
    return -1;
  }
  const n = e - s;
  if (n === 4 && (b[s]! | 0x20) === 0x74 && (b[s + 1]! | 0x20) === 0x72 && (b[s + 2]! | 0x20) === 0x75 && (b[s + 3]! | 0x20) === 0x65) return BOOLEAN;
  if (
    n === 5 &&
    (b[s]! | 0x20) === 0x66 &&
    (b[s + 1]! | 0x20) === 0x61 &&
    (b[s + 2]! | 0x20) === 0x6c &&
    (b[s + 3]! | 0x20) === 0x73 &&
    (b[s + 4]! | 0x20) === 0x65
  )
    return BOOLEAN;
  return -1;
}

class CsvScanner {
  started = false;
  private delimiter = 0x2c;
  private crlf: boolean | null = null;
  private header: string[] | null = null;
  private hasHeaderRow = true;
  private types: Uint8Array = new Uint8Array(0);
  private rows = 0;
  // Cell boundaries of the record being read: start, end, 0 plain / 1 quoted / 2 quoted with "".
  private fs = new Int32Array(0);
  private fe = new Int32Array(0);
  private fq = new Uint8Array(0);
  private bom = false;

  constructor(private readonly limits: ParseLimits) {
    this.sizeCells(64);
  }

  private sizeCells(n: number) {
    this.fs = new Int32Array(n);
    this.fe = new Int32Array(n);
    this.fq = new Uint8Array(n);
  }

  /** Decides encoding and delimiter from the first bytes; false = not for this path. */
  start(sample: Buffer, final: boolean): boolean {
    this.started = true;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: !final });
    } catch {
      return false; // Windows-1252 and friends: the papaparse path decodes them
    }
    this.bom = sample.length >= 3 && sample[0] === 0xef && sample[1] === 0xbb && sample[2] === 0xbf;
    const text = sample.toString('utf8', this.bom ? 3 : 0);
    const guess = Papa.parse<string[]>(text, { preview: 20, delimitersToGuess: [...CSV_DELIMITERS] });
    this.delimiter = (guess.meta.delimiter || ',').charCodeAt(0);
    return true;
  }

  /**
   * Reads the complete records of `b` from `from`; answers where the first incomplete one starts
   * (`b.length` when all were complete). `final`: `b` ends the file.
   */
  scan(b: Buffer, from: number, final: boolean): number {
    let p = from;
    const end = b.length;
    const D = this.delimiter;
    for (;;) {
      if (p >= end) return end;
      const recordStart = p;
      let nf = 0;
      let newlines = 0;
      // One record.
      for (;;) {
        if (nf === this.fs.length) {
          if (nf > this.limits.maxColumns + 1) fallback();
          const [fs, fe, fq] = [this.fs, this.fe, this.fq];
          this.sizeCells(nf * 2);
          this.fs.set(fs);
          this.fe.set(fe);
          this.fq.set(fq);
        }
        if (p < end && b[p] === QUOTE) {
          let q = p + 1;
          let escaped = false;
          for (;;) {
            q = b.indexOf(QUOTE, q);
            if (q === -1 || (q + 1 === end && !final)) {
              if (final) fallback(); // a quote never closed: papaparse names the row
              return recordStart;
            }
            if (q + 1 < end && b[q + 1] === QUOTE) {
              escaped = true;
              q += 2;
              continue;
            }
            break;
          }
          for (let k = b.indexOf(LF, p + 1); k !== -1 && k < q; k = b.indexOf(LF, k + 1)) newlines++;
          this.fs[nf] = p + 1;
          this.fe[nf] = q;
          this.fq[nf] = escaped ? 2 : 1;
          nf++;
          p = q + 1;
          if (p < end && b[p] !== D && b[p] !== LF && b[p] !== CR) fallback(); // text after a closing quote
        } else {
          let q = p;
          while (q < end) {
            const c = b[q];
            if (c === D || c === LF || c === CR) break;
            if (c === QUOTE) fallback(); // a quote inside a cell: the two readers disagree on it
            q++;
          }
          if (q === end && !final) return recordStart;
          this.fs[nf] = p;
          this.fe[nf] = q;
          this.fq[nf] = 0;
          nf++;
          p = q;
        }
        if (p < end && b[p] === D) {
          p++;
          continue;
        }
        // End of the record: LF, CRLF, or the end of the file.
        if (p < end) {
          if (b[p] === LF) {
            if (this.crlf === true) fallback();
            this.crlf = false;
            p++;
          } else {
            if (p + 1 === end && !final) return recordStart;
            if (p + 1 === end || b[p + 1] !== LF || this.crlf === false) fallback(); // a bare CR, or mixed line ends
            this.crlf = true;
            p += 2;
          }
        }
        break;
      }
      if (p - recordStart > this.limits.maxRecordBytes) fallback(); // papaparse refuses a row that long
      this.record(b, nf, newlines);
    }
  }

  private cellText(b: Buffer, i: number): string {
    const text = b.toString('utf8', this.fs[i]!, this.fe[i]!);
    return this.fq[i] === 2 ? text.replaceAll('""', '"') : text;
  }

  private record(b: Buffer, nf: number, newlines: number): void {
    if (nf === 1 && this.cellText(b, 0).trim() === '') fallback(); // a blank line: papaparse skips it, COPY would not
    if (nf === 1 && this.fe[0]! - this.fs[0]! === 2 && b[this.fs[0]!] === BACKSLASH && b[this.fs[0]! + 1] === DOT && this.fq[0] === 0) fallback(); // COPY's end marker
    if (!this.header) {
      if (newlines > 0) fallback();
      const cells = Array.from({ length: nf }, (_, i) => this.cellText(b, i));
      if (isNumericHeader(cells)) {
        if (this.bom) fallback();
        this.hasHeaderRow = false;
        this.setHeader(cells.map((_, i) => `column_${i + 1}`));
      } else {
        if (nf > this.limits.maxColumns) fallback();
        this.setHeader(uniqueLabels(cells));
        return;
      }
    }
    const width = this.header!.length;
    if (nf !== width) fallback(); // too few cells is an error, trailing empty cells are dropped: papaparse says which
    if (++this.rows > this.limits.maxRecords) fallback();
    const types = this.types;
    for (let i = 0; i < width; i++) {
      const t = types[i]!;
      if (t === STRING) continue;
      const s = this.fs[i]!;
      const e = this.fe[i]!;
      if (s === e) continue; // empty: null, fits every type
      let k = this.fq[i] === 2 ? STRING : classifyBytes(b, s, e);
      if (k === -1) k = CODES.get(typeOfValue(b.toString('utf8', s, e), 'text'))!;
      // A type change is rare (a few per column): the inference's own widen decides it.
      if (k !== t && k !== NONE) types[i] = CODES.get(widen(TYPES[t] ?? null, TYPES[k] ?? null))!;
    }
  }

  private setHeader(labels: string[]) {
    this.header = labels;
    this.types = new Uint8Array(labels.length);
  }

  result(complete: boolean): CsvCopyPlan | null {
    if (!this.header || this.rows === 0) return null; // papaparse says what is missing
    const schema = schemaOf(
      this.header.map((label, i) => [label, TYPES[this.types[i]!] ?? null]),
      this.rows,
    );
    return { schema, complete, delimiter: String.fromCharCode(this.delimiter), header: this.hasHeaderRow };
  }
}

/**
 * Pass one of the CSV fast path over the file's bytes: the schema and the COPY options, or null
 * when the file must take the papaparse path (which also reports every error of a bad file).
 * With `sampleBytes`, stops after the complete records of (about) that many first bytes: a guess of
 * the schema (`complete: false`) unless the file was shorter.
 */
export async function scanCsvForCopy(input: Readable, limits: ParseLimits, options: { sampleBytes?: number } = {}): Promise<CsvCopyPlan | null> {
  const scanner = new CsvScanner(limits);
  let pending: Buffer | null = null;
  let offset = 0; // where reading resumes in `pending`
  let read = 0;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      read += chunk.length;
      pending = pending ? Buffer.concat([pending.subarray(offset), chunk]) : chunk;
      offset = 0;
      if (!scanner.started) {
        if (pending.length < HEADER_SNIFF_BYTES) continue;
        if (!scanner.start(pending, false)) return null;
        if (pending[0] === 0xef && pending[1] === 0xbb && pending[2] === 0xbf) offset = 3;
      }
      offset = scanner.scan(pending, offset, false);
      if (pending.length - offset > limits.maxRecordBytes) return null;
      if (options.sampleBytes !== undefined && read >= options.sampleBytes) return scanner.result(false);
    }
    if (!pending) return null;
    if (!scanner.started) {
      if (!scanner.start(pending, true)) return null;
      if (pending[0] === 0xef && pending[1] === 0xbb && pending[2] === 0xbf) offset = 3;
    }
    scanner.scan(pending, offset, true);
    return scanner.result(true);
  } catch (e) {
    if (e instanceof Fallback) return null;
    throw e;
  } finally {
    input.destroy();
  }
}

/**
 * Cuts a CSV byte stream into chunks that end on record boundaries (a line end outside quotes), for
 * drivers that take COPY data a statement at a time (PGlite). Only for files the scan accepted.
 */
export async function* csvRecordChunks(input: AsyncIterable<Buffer>, minBytes = 4 * 1024 * 1024): AsyncGenerator<Buffer> {
  let parts: Buffer[] = [];
  let size = 0;
  let inQuotes = false;
  for await (const chunk of input) {
    let cut = -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (c === QUOTE) inQuotes = !inQuotes;
      else if (c === LF && !inQuotes) cut = i;
    }
    if (cut === -1 || size + chunk.length < minBytes) {
      parts.push(chunk);
      size += chunk.length;
      continue;
    }
    parts.push(chunk.subarray(0, cut + 1));
    yield Buffer.concat(parts);
    parts = [chunk.subarray(cut + 1)];
    size = chunk.length - cut - 1;
  }
  if (size > 0) yield Buffer.concat(parts);
}
