import type { Readable } from 'node:stream';
import Papa from 'papaparse';
import { DataFileError, type ParseLimits, type SourceRecord } from '../records.js';
import { decodeText } from './text-stream.js';

const NUMERIC = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

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
 * CSV (and TSV, `;` and `|` separated) by papaparse in streaming mode: the delimiter is detected from
 * the first chunk, quotes and `""` escapes and quoted newlines are handled, a BOM is dropped. The
 * first non-empty row is the header unless every cell in it is a number (then columns are
 * `column_1…`). A row with more non-empty cells than the header, fewer cells, or an unterminated
 * quote fails the file, naming the row and its line.
 */
export async function* parseCsv(input: Readable, limits: ParseLimits): AsyncGenerator<SourceRecord> {
  const text = decodeText(input);
  const queue: string[][] = [];
  let failure: Error | null = null;
  let done = false;
  let wake: (() => void) | null = null;
  let paused = false;
  let parserRef: Papa.Parser | null = null;
  const HIGH = 2000;

  const notify = () => {
    const w = wake;
    wake = null;
    w?.();
  };

  Papa.parse<string[]>(text as unknown as File, {
    header: false,
    skipEmptyLines: false,
    dynamicTyping: false,
    step(results, parser) {
      parserRef = parser;
      if (failure) return;
      const err = results.errors.find((e) => e.type === 'Quotes' || e.code === 'MissingQuotes' || e.code === 'InvalidQuotes');
      if (err) {
        failure = new DataFileError(`CSV quoting error: ${err.message}`, { row: queue.length });
        parser.abort();
        notify();
        return;
      }
      queue.push(results.data);
      if (queue.length >= HIGH && !paused) {
        paused = true;
        parser.pause();
      }
      notify();
    },
    complete() {
      done = true;
      notify();
    },
    error(e: Error) {
      failure = new DataFileError(`CSV could not be read: ${e.message}`);
      done = true;
      notify();
    },
  });
  text.on('error', (e) => {
    failure = e;
    done = true;
    notify();
  });

  let header: string[] | null = null;
  let line = 1;
  let row = 0;
  try {
    for (;;) {
      if (queue.length === 0) {
        if (failure) break;
        if (done) break;
        if (paused && parserRef) {
          // resume() may parse the rest of the chunk synchronously (and pause again): look again first.
          paused = false;
          (parserRef as Papa.Parser).resume();
          continue;
        }
        await new Promise<void>((r) => (wake = r));
        continue;
      }
      const cells = queue.shift()!;
      const startLine = line;
      line += 1 + countNewlines(cells);
      if (cells.length === 1 && cells[0].trim() === '') continue; // blank line
      if (!header) {
        if (cells.every((c) => NUMERIC.test(c))) {
          header = cells.map((_, i) => `column_${i + 1}`);
        } else {
          if (cells.length > limits.maxColumns) throw new DataFileError(`the header has ${cells.length} columns; at most ${limits.maxColumns} are allowed`, { line: startLine });
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
      for (let i = 0; i < header.length; i++) {
        const c = cells[i];
        if (c.length > limits.maxRecordBytes) throw new DataFileError(`a field is longer than ${limits.maxRecordBytes} bytes`, { row, line: startLine, column: header[i] });
        fields[header[i]] = c;
      }
      yield { row, line: startLine, fields };
    }
    if (failure) {
      const f = failure as Error;
      if (f instanceof DataFileError) {
        throw new DataFileError(f.message, { row: row + 1, line });
      }
      throw f;
    }
    if (!header) throw new DataFileError('the file is empty: no header row');
  } finally {
    if (!done) {
      (parserRef as Papa.Parser | null)?.abort();
      text.destroy();
    }
  }
}
