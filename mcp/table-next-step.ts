import { tableAddress } from './table-write-keys.js';

/** What an answer that made a Table (create_table_api, account_create_table, a dataset) says of it. */
export interface MadeTable {
  pathUrl?: unknown;
  writeKey?: unknown;
  publicInsert?: unknown;
  requireReadKey?: unknown;
  methods?: unknown;
}

/**
 * Said after a Table is made: the two values the table tools take (so the model does not read them
 * out of the URL), and how the app's own pages reach it: the root-relative path works on the app's
 * host and at its path fallback, the answer's shape is the Table API's (`{records: [{id, fields}]}`,
 * which a page written from a guess reads as flat rows), and the write key stays out of the browser.
 * Empty when the answer holds no Table address.
 */
export function madeTableNextStep(made: MadeTable | undefined, remembersKey: boolean): string {
  const pathUrl = typeof made?.pathUrl === 'string' ? made.pathUrl : undefined;
  const at = pathUrl ? tableAddress(pathUrl) : null;
  if (!pathUrl || !at) return '';
  const key = remembersKey && typeof made?.writeKey === 'string' ? '; this server remembers its write key' : '';
  return ` The table tools take appName ${at.appName}, table ${at.table}${key}. The app's pages reach it at ${new URL(pathUrl).pathname}: ${fromPages(made!)}.`;
}

function fromPages(made: MadeTable): string {
  const keyOutOfPages = 'the write key must never be in a page';
  if (made.requireReadKey === true) return `reads need the write key too (requireReadKey), and ${keyOutOfPages}`;
  const reads = 'GET answers {"records": [{"id", "fields": {…}}]}';
  const methods = Array.isArray(made.methods) ? made.methods : [];
  if (!methods.includes('POST')) return reads;
  if (made.publicInsert === true) return `${reads}; POST {"record": {…}} adds one, with no key (publicInsert)`;
  return `${reads}; writes need the write key, and ${keyOutOfPages}`;
}
