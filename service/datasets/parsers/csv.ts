import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import { DataFileError, type ParseLimits, type SourceRecord } from '../records.js';
import { decodeText } from './text-stream.js';

const NUMERIC = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
/** The delimiters papaparse may guess, and how much of the file it guesses from. */
export const CSV_DELIMITERS = [',', ';', '\t', '|'] as const;
export const HEADER_SNIFF_BYTES = 64 * 1024;

/** A first row of numbers only is data, not a header (columns are then `column_1…`). */
export function isNumericHeader(cells: string[]): boolean {
  return cells.every((c) => NUMERIC.test(c));
}

/** Makes header labels unique: a second `name` becomes `name (2)`; an empty one `column_3`. */
export function uniqueLabels(raw: string[]): string[] {
  const seen = new Set<string>();
  return raw.map((h, i) => {
    const base = h.trim() === '' ? `column_${i + 1}` : h.trim();
    let label = base;
    for (let n = 2; seen.has(label.toLowerCase()); n++) label = `${base} (${n})`;
    seen.add(label.toLowerCase());
    return label;
  });
}

function countNewlines(cells: string[]): number {
  let n = 0;
  for (const c of cells) {
    if (c.length > 0 && c.indexOf('\n') !== -1) for (let i = 0; i < c.length; i++) if (c.charCodeAt(i) === 10) n++;
  }
  return n;
}

/**
 * CSV (and TSV, `;` and `|` separated) by papaparse's parser, driven chunk by chunk: the delimiter
 * and line break are detected from the first 64 KiB (papaparse's guesser), every chunk is parsed up
 * to its last complete row, the incomplete rest is carried into the next chunk. Quotes, `""`
 * escapes and quoted newlines are handled; a BOM is dropped. Memory is one chunk plus one row. The
 * first non-empty row is the header unless every cell in it is a number (then columns are
 * `column_1…`). A row with more non-empty cells than the header, fewer cells, or an unterminated
 * quote fails the file, naming the row and its line.
 */
export async function* parseCsv(input: Readable, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  const text = decodeText(input);
  const csv = new CsvRows(limits);
  let sample = '';
  try {
    for await (const chunk of text as AsyncIterable<string>) {
      if (csv.started) {
        yield* csv.feed(chunk);
        continue;
      }
      sample += chunk;
      if (sample.length < HEADER_SNIFF_BYTES) continue;
      csv.start(sample);
      yield* csv.feed(sample);
      sample = '';
    }
    yield* csv.end(sample);
  } finally {
    text.destroy();
  }
}

/** The rows of one CSV file as papaparse parses it chunk by chunk, checked against the header and limits. */
class CsvRows {
  readonly #limits: ParseLimits;
  #parser: Papa.Parser | null = null;
  /** The incomplete last row of the previous chunk. */
  #carry = '';
  #header: string[] | null = null;
  #line = 1;
  #row = 0;

  constructor(limits: ParseLimits) {
    this.#limits = limits;
  }

  get started(): boolean {
    return this.#parser !== null;
  }

  /** Guesses the delimiter and line break from the first bytes and makes the parser. */
  start(sample: string): void {
    const guess = Papa.parse<string[]>(sample, { preview: 20, delimitersToGuess: [...CSV_DELIMITERS] });
    this.#parser = new Papa.Parser({
      delimiter: guess.meta.delimiter || ',',
      newline: (guess.meta.linebreak || '\n') as '\n',
      quoteChar: '"',
      escapeChar: '"',
    });
  }

  /** The complete rows of the carried rest plus `chunk`; the incomplete last row is carried on. */
  feed(chunk: string): Generator<SourceRecord> {
    return this.#records(this.#parse(this.#carry + chunk, false));
  }

  /** The last rows (a file shorter than the sniff sample is parsed here whole); a file without a header fails. */
  *end(sample: string): Generator<SourceRecord> {
    if (!this.#parser) this.start(sample);
    const rest = this.#carry + sample;
    if (rest) yield* this.#records(this.#parse(rest, true));
    if (!this.#header) throw new DataFileError('the file is empty: no header row');
  }

  #parse(input: string, last: boolean): string[][] {
    const result = this.#parser!.parse(input, 0, !last) as Papa.ParseResult<string[]>;
    const quote = result.errors.find((e) => e.type === 'Quotes');
    if (quote) {
      // Count the complete rows before the bad one, so the error names its row and line.
      for (const _ of this.#records(result.data.slice(0, quote.row ?? 0)));
      throw new DataFileError(`CSV quoting error: ${quote.message}`, { row: this.#row + 1, line: this.#line });
    }
    if (last) {
      this.#carry = '';
      return result.data;
    }
    this.#carry = input.slice((result.meta as { cursor: number }).cursor);
    if (this.#carry.length > this.#limits.maxRecordBytes) {
      throw new DataFileError(`a row is longer than ${this.#limits.maxRecordBytes} bytes (or a quote is never closed)`, {
        row: this.#row + 1 + result.data.length,
        line: this.#line,
      });
    }
    return result.data;
  }

  *#records(rows: string[][]): Generator<SourceRecord> {
    for (const cells of rows) {
      const line = this.#line;
      this.#line += 1 + countNewlines(cells);
      if (cells.length === 1 && cells[0]!.trim() === '') continue; // blank line
      if (!this.#header) {
        // A first row of numbers is data under `column_1…`; any other first row is the header.
        const numeric = isNumericHeader(cells);
        this.#header = numeric ? cells.map((_, i) => `column_${i + 1}`) : this.#labels(cells, line);
        if (!numeric) continue;
      }
      yield this.#record(this.#header, cells, line);
    }
  }

  /** The header row's labels, made unique. */
  #labels(cells: string[], line: number): string[] {
    if (cells.length > this.#limits.maxColumns)
      throw new DataFileError(`the header has ${cells.length} columns; at most ${this.#limits.maxColumns} are allowed`, { line });
    return uniqueLabels(cells);
  }

  #record(header: string[], cells: string[], line: number): SourceRecord {
    const row = ++this.#row;
    if (row > this.#limits.maxRecords) throw new DataFileError(`more than ${this.#limits.maxRecords} records`, { row, line });
    if (cells.length < header.length || (cells.length > header.length && cells.slice(header.length).some((c) => c.trim() !== ''))) {
      throw new DataFileError(`has ${cells.length} fields; the header has ${header.length}`, { row, line });
    }
    const fields: Record<string, unknown> = {};
    for (let i = 0; i < header.length; i++) fields[header[i]!] = cells[i];
    return { row, line, fields };
  }
}
