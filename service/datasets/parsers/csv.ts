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
  let parser: Papa.Parser | null = null;
  let carry = '';
  let sample = '';
  let header: string[] | null = null;
  let line = 1;
  let row = 0;

  function* emit(rows: string[][]): Generator<SourceRecord> {
    for (const cells of rows) {
      const startLine = line;
      line += 1 + countNewlines(cells);
      if (cells.length === 1 && cells[0]!.trim() === '') continue; // blank line
      if (!header) {
        if (isNumericHeader(cells)) {
          header = cells.map((_, i) => `column_${i + 1}`);
        } else {
          if (cells.length > limits.maxColumns)
            throw new DataFileError(`the header has ${cells.length} columns; at most ${limits.maxColumns} are allowed`, { line: startLine });
          header = uniqueLabels(cells);
          continue;
        }
      }
      row++;
      if (row > limits.maxRecords) throw new DataFileError(`more than ${limits.maxRecords} records`, { row, line: startLine });
      if (cells.length < header.length) {
        throw new DataFileError(`has ${cells.length} fields; the header has ${header.length}`, { row, line: startLine });
      }
      if (cells.length > header.length && cells.slice(header.length).some((c) => c.trim() !== '')) {
        throw new DataFileError(`has ${cells.length} fields; the header has ${header.length}`, { row, line: startLine });
      }
      const fields: Record<string, unknown> = {};
      for (let i = 0; i < header.length; i++) fields[header[i]!] = cells[i];
      yield { row, line: startLine, fields };
    }
  }

  const parse = (input: string, last: boolean): string[][] => {
    const result = parser!.parse(input, 0, !last) as Papa.ParseResult<string[]>;
    const quote = result.errors.find((e) => e.type === 'Quotes');
    if (quote) {
      const before = result.data.slice(0, quote.row ?? 0);
      // Count the complete rows before the bad one, so the error names its row and line.
      const n = [...emit(before)].length;
      void n;
      throw new DataFileError(`CSV quoting error: ${quote.message}`, { row: row + 1, line });
    }
    if (last) {
      carry = '';
    } else {
      const cursor = (result.meta as { cursor: number }).cursor;
      carry = input.slice(cursor);
      if (carry.length > limits.maxRecordBytes) {
        throw new DataFileError(`a row is longer than ${limits.maxRecordBytes} bytes (or a quote is never closed)`, {
          row: row + 1 + result.data.length,
          line,
        });
      }
    }
    return result.data;
  };

  const start = (s: string) => {
    const guess = Papa.parse<string[]>(s, { preview: 20, delimitersToGuess: [...CSV_DELIMITERS] });
    parser = new Papa.Parser({ delimiter: guess.meta.delimiter || ',', newline: (guess.meta.linebreak || '\n') as '\n', quoteChar: '"', escapeChar: '"' });
  };

  try {
    for await (const chunk of text as AsyncIterable<string>) {
      if (!parser) {
        sample += chunk;
        if (sample.length < HEADER_SNIFF_BYTES) continue;
        start(sample);
        const input = sample;
        sample = '';
        yield* emit(parse(input, false));
        continue;
      }
      yield* emit(parse(carry + chunk, false));
    }
    if (!parser) start(sample);
    const rest = sample || carry;
    if (rest) yield* emit(parse(rest, true));
    if (!header) throw new DataFileError('the file is empty: no header row');
  } finally {
    text.destroy();
  }
}
