import type { Readable } from 'node:stream';
import ExcelJS from 'exceljs';
import { DataFileError, SheetNotFound, type ParseLimits, type SourceRecord } from '../records.js';
import { uniqueLabels } from './csv.js';

/** A cell's value as data: formulas give their cached result, rich text its text, errors null. */
export function cellValue(v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object' || v instanceof Date) return v;
  const o = v as Record<string, unknown>;
  if ('result' in o) return cellValue(o.result);
  if ('formula' in o || 'sharedFormula' in o) return null;
  if (Array.isArray(o.richText)) return (o.richText as { text?: string }[]).map((r) => r.text ?? '').join('');
  if ('text' in o) return cellValue(o.text);
  if ('error' in o) return null;
  return JSON.stringify(v);
}

function headerText(v: unknown): string {
  const c = cellValue(v);
  if (c === null) return '';
  if (c instanceof Date) return c.toISOString().slice(0, 10);
  return String(c);
}

/**
 * exceljs's streaming reader, in one pass over the zip, sometimes never hands over its last entry, and
 * the writer of most files (exceljs, and others) stores `xl/workbook.xml` last: the reader then fails
 * on the first sheet with "Cannot read properties of undefined (reading 'sheets')" (exceljs#3064, a
 * race seen on Node 18 and later; our test suite met it under load). Nothing has been read by then,
 * so the file is read again from its start, up to `XLSX_READS` times in all; a file that truly lacks
 * its workbook part fails the same way each time and gets the usual answer.
 */
const XLSX_READS = 3;
const LOST_WORKBOOK = /reading 'sheets'/;

/**
 * XLSX by exceljs's streaming WorkbookReader: the zip is read as it arrives and rows are handed
 * over one by one (worksheets that arrive before the shared strings are spooled to temp files by
 * exceljs, never held in memory). Reads the first sheet, or the sheet named `sheet`. The first
 * non-empty row is the header. Date-formatted cells come back as dates (styles are read for that).
 * `open` gives the file from its start (more than once when exceljs loses its workbook entry).
 */
export async function* parseXlsx(open: () => Promise<Readable>, limits: ParseLimits, sheet?: string): AsyncGenerator<SourceRecord> {
  for (let read = 1; ; read++) {
    let yielded = false;
    try {
      for await (const record of readXlsx(await open(), limits, sheet)) {
        yielded = true;
        yield record;
      }
      return;
    } catch (e) {
      if (yielded || read >= XLSX_READS || !(e instanceof LostWorkbookEntry)) throw e instanceof LostWorkbookEntry ? e.asDataFileError() : e;
    }
  }
}

class LostWorkbookEntry extends Error {
  asDataFileError(): DataFileError {
    return new DataFileError('not a readable XLSX workbook: its workbook part (xl/workbook.xml) could not be read');
  }
}

async function* readXlsx(input: Readable, limits: ParseLimits, sheet?: string): AsyncGenerator<SourceRecord> {
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(input, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    styles: 'cache',
    hyperlinks: 'ignore',
    entries: 'ignore',
  });
  const seen: string[] = [];
  let found = false;
  try {
    for await (const ws of reader) {
      const w = ws as unknown as { name: string; [Symbol.asyncIterator](): AsyncIterator<ExcelJS.Row> };
      seen.push(w.name);
      const model = (reader as unknown as { model?: { sheets?: { name: string }[] } }).model;
      const wanted = sheet ?? model?.sheets?.[0]?.name ?? w.name;
      if (found || w.name !== wanted) {
        // Read past a sheet we skip: exceljs deletes a spooled sheet's temp file when we move on, and
        // a read stream it opened on that file but nobody read would fail (ENOENT) with no listener.
        for await (const _ of w) void _;
        continue;
      }
      found = true;
      let header: string[] | null = null;
      let row = 0;
      for await (const r of w as AsyncIterable<ExcelJS.Row>) {
        const values = (r.values as unknown[]).slice(1); // row.values is 1-based
        if (values.every((v) => cellValue(v) === null || cellValue(v) === '')) continue;
        if (!header) {
          if (values.length > limits.maxColumns)
            throw new DataFileError(`the header has ${values.length} columns; at most ${limits.maxColumns} are allowed`, { sheet: w.name, line: r.number });
          header = uniqueLabels(Array.from({ length: values.length }, (_, i) => headerText(values[i])));
          continue;
        }
        row++;
        if (row > limits.maxRecords) throw new DataFileError(`more than ${limits.maxRecords} records`, { sheet: w.name, row, line: r.number });
        const fields: Record<string, unknown> = {};
        for (let i = 0; i < values.length; i++) {
          const v = cellValue(values[i]);
          if (i >= header.length) {
            if (v !== null && v !== '') throw new DataFileError(`has a value in column ${i + 1}, which has no header`, { sheet: w.name, row, line: r.number });
            continue;
          }
          fields[header[i]!] = v;
        }
        yield { row, line: r.number, fields };
      }
      if (!header) throw new DataFileError('the sheet is empty', { sheet: w.name });
    }
  } catch (e) {
    if (e instanceof DataFileError) throw e;
    if (LOST_WORKBOOK.test((e as Error).message)) throw new LostWorkbookEntry((e as Error).message);
    throw new DataFileError(`not a readable XLSX workbook: ${(e as Error).message}`);
  }
  if (!found) {
    if (sheet) throw new SheetNotFound(`the workbook has no sheet named "${sheet}" (sheets: ${seen.join(', ')})`);
    throw new DataFileError('the workbook has no sheets');
  }
}
