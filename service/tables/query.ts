import { sql, type SQL } from 'drizzle-orm';
import { AGGREGATES, FILTER_OPERATORS, type Aggregate, type FilterOperator } from '../../shared/tables/query.js';
import { FIELD_NAME_PATTERN, TABLE_LIMITS, type FieldType, type TableSchema } from '../../shared/tables/schema.js';
import { AppError } from '../kernel/app-error.js';
import { columnAnswerJson, columnFieldsJsonExpr, columnJsonExpr, columnOutputExpr, columnTableName, quoteColumn } from '../db/column-storage.js';
import type { FieldIssue } from './records.js';
import type { TableRow } from '../db/schema/tables.js';
import { isValidDate, normaliseDatetime, normaliseValue } from './records.js';

/**
 * The Table API query language: `parseTableQuery` turns a query string into a checked plan (every
 * field name exists, every value has its field's type), `compile*` turn the plan into one
 * parameterised SQL statement. Field names are inlined only after they matched
 * the schema (and FIELD_NAME_PATTERN); every value is a bound parameter. The SQL reads either
 * storage of records (see RecordSource).
 */

interface FieldRef {
  name: string;
  type: FieldType;
}
/** Sort/keyset keys: a schema field, or the record id (always the last tie-breaker). */
type SortKey = { field: FieldRef | 'id'; dir: 'asc' | 'desc' };

export interface Filter {
  field: FieldRef;
  op: FilterOperator;
  /** Normalised typed value(s); for isnull a boolean. */
  value: unknown;
}

export interface TableQueryPlan {
  limit: number;
  offset: number;
  includeTotal: boolean;
  filters: Filter[];
  search?: { q: string; fields: FieldRef[] };
  dateRange?: { field: FieldRef; from?: string; to?: string };
  bbox?: { lon: FieldRef; lat: FieldRef; minLon: number; minLat: number; maxLon: number; maxLat: number };
  sort: SortKey[];
  cursor?: { values: unknown[]; id: number };
  projection?: string[];
  compact: boolean;
  aggregate?: { fn: Aggregate; field?: FieldRef; groupBy?: FieldRef };
}

const KNOWN_PARAMS = new Set([
  'limit',
  'offset',
  'includeTotal',
  'field',
  'value',
  'filter',
  'filterValue',
  'sortField',
  'sortDir',
  'sort',
  'q',
  'searchFields',
  'dateField',
  'dateFrom',
  'dateTo',
  'fields',
  'columns',
  'compact',
  'aggregate',
  'aggregateField',
  'groupBy',
  'bbox',
  'longitudeField',
  'latitudeField',
  'cursor',
]);
const BRACKET_FILTER = /^filter\[([^\]]*)\](?:\[([^\]]*)\])?$/;
const ORDERABLE: FieldType[] = ['string', 'number', 'integer', 'boolean', 'date', 'datetime'];

class IssueList {
  issues: FieldIssue[] = [];
  unknownFields = new Set<string>();
  /** A sort asked for a creation time the schema lacks (the answer says how to get that order). */
  sortedByCreation = false;
  add(param: string, message: string) {
    this.issues.push({ field: param, message });
  }
}

function parseBool(text: string | null, param: string, issues: IssueList): boolean {
  if (text === null) return false;
  const t = text.toLowerCase();
  if (t === '' || t === 'true' || t === '1' || t === 'yes') return true;
  if (t === 'false' || t === '0' || t === 'no') return false;
  issues.add(param, 'expected true or false');
  return false;
}

function parseIntParam(text: string | null, param: string, min: number, max: number, dflt: number, issues: IssueList): number {
  if (text === null || text === '') return dflt;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    issues.add(param, `expected an integer from ${min} to ${max}`);
    return dflt;
  }
  return Number(text);
}

function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** Parses a filter value for `field` with operator `op` into its stored form. */
function filterValue(field: FieldRef, op: FilterOperator, raw: string, param: string, issues: IssueList): unknown {
  if (op === 'isnull') {
    const b = raw.toLowerCase();
    if (b === 'true' || b === '' || b === '1') return true;
    if (b === 'false' || b === '0') return false;
    issues.add(param, 'isnull takes true or false');
    return true;
  }
  if (field.type === 'json') {
    issues.add(param, `field "${field.name}" is json: only isnull filters apply to it`);
    return null;
  }
  if (op === 'ilike') {
    if (field.type !== 'string') issues.add(param, `ilike applies to string fields; "${field.name}" is ${field.type}`);
    return raw;
  }
  if (op === 'in') {
    const parts = raw === '' ? [] : raw.split(',');
    if (parts.length === 0 || parts.length > TABLE_LIMITS.maxInValues) issues.add(param, `in takes 1 to ${TABLE_LIMITS.maxInValues} comma-separated values`);
    return parts.map((p) => scalar(field, p, param, issues));
  }
  return scalar(field, raw, param, issues);
}

function scalar(field: FieldRef, raw: string, param: string, issues: IssueList): unknown {
  const r = normaliseValue(field.type, raw);
  if (!r.ok) {
    issues.add(param, `${r.message} for field "${field.name}" (${field.type})`);
    return null;
  }
  return r.value;
}

export interface CursorPayload {
  /** Sort signature the cursor belongs to. */
  s: string;
  v: unknown[];
  id: number;
}

function sortSignature(sort: SortKey[]): string {
  return sort.map((k) => `${k.dir === 'desc' ? '-' : ''}${k.field === 'id' ? 'id' : k.field.name}`).join(',');
}

export function encodeCursor(payload: CursorPayload): string {
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}

function decodeCursor(text: string): CursorPayload | null {
  try {
    const p = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as CursorPayload;
    if (typeof p?.s !== 'string' || !Array.isArray(p.v) || !Number.isSafeInteger(p.id)) return null;
    return p;
  } catch {
    return null;
  }
}

/** What every part of a query-string parse shares: the schema's fields, the issues found so far. */
interface QueryParse {
  schema: TableSchema;
  params: URLSearchParams;
  issues: IssueList;
  byName: Map<string, FieldRef>;
  get(name: string): string | null;
  /** The field called `name` (an issue of `param` when there is none). */
  ref(name: string, param: string): FieldRef | undefined;
}

/** The `filter[name][op]` parameters, as [name, op, value]; any other parameter this API does not know is an issue. */
function bracketFilterParams(ctx: QueryParse): [string, string, string][] {
  const { issues } = ctx;
  const bracketFilters: [string, string, string][] = [];
  for (const [key, value] of ctx.params) {
    if (KNOWN_PARAMS.has(key) || key.startsWith('_')) continue;
    const m = BRACKET_FILTER.exec(key);
    if (m) bracketFilters.push([m[1]!, m[2] ?? 'eq', value]);
    else issues.add(key, 'unknown query parameter');
  }
  return bracketFilters;
}

/** `field`/`value`, `filter`/`filterValue` and the `filter[name][op]` parameters. */
function parseFilters(ctx: QueryParse, bracketFilters: [string, string, string][]): Filter[] {
  const { issues, ref, get } = ctx;
  const filters: Filter[] = [];
  const equality = (fieldParam: string, valueParam: string) => {
    const name = get(fieldParam);
    const value = get(valueParam);
    if (name === null && value === null) return;
    if (name === null || name === '') return issues.add(fieldParam, `${valueParam} needs ${fieldParam}`);
    if (value === null) return issues.add(valueParam, `${fieldParam} needs ${valueParam}`);
    const f = ref(name, fieldParam);
    if (f) filters.push({ field: f, op: 'eq', value: filterValue(f, 'eq', value, valueParam, issues) });
  };
  equality('field', 'value');
  equality('filter', 'filterValue');
  for (const [name, op, value] of bracketFilters) {
    const param = `filter[${name}][${op}]`;
    if (!(FILTER_OPERATORS as readonly string[]).includes(op)) {
      issues.add(param, `unknown operator "${op}" (use ${FILTER_OPERATORS.join(', ')})`);
      continue;
    }
    const f = ref(name, param);
    if (f) filters.push({ field: f, op: op as FilterOperator, value: filterValue(f, op as FilterOperator, value, param, issues) });
  }
  if (filters.length > TABLE_LIMITS.maxFilters) issues.add('filter', `at most ${TABLE_LIMITS.maxFilters} filters`);
  return filters;
}

/** `q` over `searchFields` (default: every string field). */
function parseSearch(ctx: QueryParse): TableQueryPlan['search'] {
  const { issues, ref, get } = ctx;
  let search: TableQueryPlan['search'];
  const q = get('q');
  const searchFieldsText = get('searchFields');
  if (q !== null && q !== '') {
    const fields = searchFieldsText
      ? splitList(searchFieldsText)
          .map((n) => ref(n, 'searchFields'))
          .filter((f): f is FieldRef => Boolean(f))
      : ctx.schema.fields.filter((f) => f.type === 'string').map((f) => ctx.byName.get(f.name)!);
    for (const f of fields) if (f.type === 'json') issues.add('searchFields', `field "${f.name}" is json and cannot be searched`);
    if (fields.length === 0 && !searchFieldsText) issues.add('q', 'the table has no string fields; name searchFields');
    search = { q, fields };
  } else if (searchFieldsText) {
    for (const n of splitList(searchFieldsText)) ref(n, 'searchFields');
  }
  return search;
}

/** `dateField` with `dateFrom`/`dateTo` (a day given as the end bound includes the whole day). */
function parseDateRange(ctx: QueryParse): TableQueryPlan['dateRange'] {
  const { issues, ref, get } = ctx;
  let dateRange: TableQueryPlan['dateRange'];
  const dateField = get('dateField');
  const dateFrom = get('dateFrom');
  const dateTo = get('dateTo');
  if (dateField || dateFrom || dateTo) {
    if (!dateField) issues.add('dateField', 'dateFrom/dateTo need dateField');
    else {
      const f = ref(dateField, 'dateField');
      if (f && f.type !== 'date' && f.type !== 'datetime') issues.add('dateField', `field "${f.name}" is ${f.type}, not date or datetime`);
      else if (f) {
        const bound = (text: string | null, param: string, end: boolean): string | undefined => {
          if (text === null || text === '') return undefined;
          const isDay = isValidDate(text);
          const dt = normaliseDatetime(text);
          if (!dt) {
            issues.add(param, 'expected YYYY-MM-DD or an ISO 8601 datetime');
            return undefined;
          }
          if (f.type === 'date') return dt.slice(0, 10);
          return isDay && end ? `${text}T23:59:59.999Z` : dt;
        };
        dateRange = { field: f, from: bound(dateFrom, 'dateFrom', false), to: bound(dateTo, 'dateTo', true) };
      }
    }
  }
  return dateRange;
}

/** `bbox` over `longitudeField`/`latitudeField` (default: a field called lon/lat/…). */
function parseBbox(ctx: QueryParse): TableQueryPlan['bbox'] {
  const { issues, ref, get } = ctx;
  let bbox: TableQueryPlan['bbox'];
  const bboxText = get('bbox');
  if (bboxText !== null) {
    const nums = bboxText.split(',').map((s) => (NUMERIC_TEXT.test(s.trim()) ? Number(s.trim()) : NaN));
    const [minLon = NaN, minLat = NaN, maxLon = NaN, maxLat = NaN] = nums;
    if (nums.length !== 4 || nums.some((n) => !Number.isFinite(n))) issues.add('bbox', 'expected minLon,minLat,maxLon,maxLat');
    else if ([minLon, maxLon].some((n) => n < -180 || n > 180) || [minLat, maxLat].some((n) => n < -90 || n > 90) || minLat > maxLat) {
      issues.add('bbox', 'longitudes in [-180,180], latitudes in [-90,90], minLat ≤ maxLat');
    }
    const pick = (param: string, names: string[]): FieldRef | undefined => {
      const given = get(param);
      if (given) return ref(given, param);
      const found = ctx.schema.fields.find((f) => names.includes(f.name.toLowerCase()));
      if (!found) issues.add(param, `name the ${param} (no field called ${names.join('/')})`);
      return found ? ctx.byName.get(found.name) : undefined;
    };
    const lon = pick('longitudeField', ['longitude', 'lon', 'lng', 'long']);
    const lat = pick('latitudeField', ['latitude', 'lat']);
    for (const [f, p] of [
      [lon, 'longitudeField'],
      [lat, 'latitudeField'],
    ] as const) {
      if (f && f.type !== 'number' && f.type !== 'integer') issues.add(p, `field "${f.name}" is ${f.type}, not number`);
    }
    if (lon && lat && !issues.issues.some((i) => i.field === 'bbox')) bbox = { lon, lat, minLon, minLat, maxLon, maxLat };
  } else {
    for (const p of ['longitudeField', 'latitudeField']) {
      const v = get(p);
      if (v) ref(v, p);
    }
  }
  return bbox;
}

/** `sort` (comma list, `-` for descending) or `sortField`/`sortDir`; `id` ends every order. */
function parseSort(ctx: QueryParse): SortKey[] {
  const { issues, ref, get } = ctx;
  const sort: SortKey[] = [];
  const sortText = get('sort');
  const sortField = get('sortField');
  const sortDir = get('sortDir');
  if (sortDir !== null && sortDir !== 'asc' && sortDir !== 'desc') issues.add('sortDir', 'expected asc or desc');
  if (sortText && sortField) issues.add('sort', 'use either sort or sortField/sortDir');
  const addSort = (name: string, dir: 'asc' | 'desc', param: string) => {
    if (name === 'id') return sort.push({ field: 'id', dir });
    const f = ref(name, param);
    if (!f) {
      if (CREATED_AT.test(name)) issues.sortedByCreation = true;
      return;
    }
    if (!ORDERABLE.includes(f.type)) return issues.add(param, `field "${f.name}" is json and cannot be sorted`);
    sort.push({ field: f, dir });
  };
  if (sortText) {
    const keys = splitList(sortText);
    if (keys.length > TABLE_LIMITS.maxSortKeys) issues.add('sort', `at most ${TABLE_LIMITS.maxSortKeys} sort keys`);
    for (const k of keys) {
      // SQL's "price desc": said how to write it here rather than refused as a field named "price desc".
      const worded = /^(\S+)\s+(asc|desc)$/i.exec(k);
      if (worded) {
        const desc = worded[2]!.toLowerCase() === 'desc';
        issues.add('sort', `write ${desc ? '-' : ''}${worded[1]} for ${desc ? 'descending' : 'ascending'} order, not "${k}"`);
        continue;
      }
      addSort(k.replace(/^[-+]/, ''), k.startsWith('-') ? 'desc' : 'asc', 'sort');
    }
  } else if (sortField) addSort(sortField, sortDir === 'desc' ? 'desc' : 'asc', 'sortField');
  if (!sort.some((k) => k.field === 'id')) sort.push({ field: 'id', dir: 'asc' });
  else sort.splice(sort.findIndex((k) => k.field === 'id') + 1);
  return sort;
}

/** `cursor`: a `nextCursor` of the same sort order (and not with `offset`). */
function parseCursor(ctx: QueryParse, sort: SortKey[]): TableQueryPlan['cursor'] {
  const { issues, get } = ctx;
  let cursor: TableQueryPlan['cursor'];
  const cursorText = get('cursor');
  if (cursorText) {
    const p = decodeCursor(cursorText);
    if (!p) issues.add('cursor', 'not a cursor of this API; pass nextCursor unchanged');
    else if (p.s !== sortSignature(sort) || p.v.length !== sort.length - 1)
      issues.add('cursor', 'the cursor belongs to another sort order; keep the same sort while paging');
    else cursor = { values: p.v, id: p.id };
    if (get('offset')) issues.add('offset', 'use either cursor or offset');
  }
  return cursor;
}

/** `fields` (or its alias `columns`): the fields each record carries. */
function parseProjection(ctx: QueryParse): string[] | undefined {
  const { issues, ref, get } = ctx;
  let projection: string[] | undefined;
  const fieldsText = get('fields') ?? get('columns');
  if (get('fields') && get('columns')) issues.add('columns', 'use either fields or columns');
  if (fieldsText !== null) {
    projection = splitList(fieldsText);
    for (const n of projection) ref(n, get('fields') !== null ? 'fields' : 'columns');
  }
  return projection;
}

/** `aggregate` over `aggregateField`, grouped by `groupBy`. */
function parseAggregate(ctx: QueryParse): TableQueryPlan['aggregate'] {
  const { issues, ref, get } = ctx;
  let aggregate: TableQueryPlan['aggregate'];
  const agg = get('aggregate');
  const aggField = get('aggregateField');
  const groupBy = get('groupBy');
  if (agg !== null) {
    if (!(AGGREGATES as readonly string[]).includes(agg)) issues.add('aggregate', `expected one of ${AGGREGATES.join(', ')}`);
    else {
      const fn = agg as Aggregate;
      const field = aggField ? ref(aggField, 'aggregateField') : undefined;
      if (!aggField && fn !== 'count') issues.add('aggregateField', `${fn} needs aggregateField`);
      if (field && (fn === 'sum' || fn === 'avg') && field.type !== 'number' && field.type !== 'integer')
        issues.add('aggregateField', `${fn} needs a number field; "${field.name}" is ${field.type}`);
      if (field && (fn === 'min' || fn === 'max') && !ORDERABLE.includes(field.type)) issues.add('aggregateField', `field "${field.name}" is json`);
      const g = groupBy ? ref(groupBy, 'groupBy') : undefined;
      if (g && !ORDERABLE.includes(g.type)) issues.add('groupBy', `field "${g.name}" is json and cannot be grouped`);
      aggregate = { fn, field, groupBy: g };
    }
  } else {
    if (aggField) issues.add('aggregateField', 'needs aggregate');
    if (groupBy) issues.add('groupBy', 'needs aggregate');
  }
  return aggregate;
}

/**
 * Parses and checks the query string of `GET {table_base_url}` against the table schema. Every
 * problem is collected and thrown as one 400: unknown parameters, unknown field names (listed in
 * `details.unknownFields`), and values that do not fit their field.
 */
export function parseTableQuery(schema: TableSchema, params: URLSearchParams): TableQueryPlan {
  const issues = new IssueList();
  const byName = new Map(schema.fields.map((f) => [f.name, { name: f.name, type: f.type } as FieldRef]));
  const ctx: QueryParse = {
    schema,
    params,
    issues,
    byName,
    get: (name) => params.get(name),
    ref: (name, param) => {
      const f = byName.get(name);
      if (!f) {
        issues.unknownFields.add(name);
        issues.add(param, `unknown field "${name}"`);
      }
      return f;
    },
  };
  const { get } = ctx;
  const bracketFilters = bracketFilterParams(ctx);
  const limit = parseIntParam(get('limit'), 'limit', 1, TABLE_LIMITS.maxLimit, TABLE_LIMITS.defaultLimit, issues);
  const offset = parseIntParam(get('offset'), 'offset', 0, Number.MAX_SAFE_INTEGER, 0, issues);
  const includeTotal = parseBool(get('includeTotal'), 'includeTotal', issues);
  const compact = parseBool(get('compact'), 'compact', issues);
  const filters = parseFilters(ctx, bracketFilters);
  const search = parseSearch(ctx);
  const dateRange = parseDateRange(ctx);
  const bbox = parseBbox(ctx);
  const sort = parseSort(ctx);
  const cursor = parseCursor(ctx, sort);
  const projection = parseProjection(ctx);
  const aggregate = parseAggregate(ctx);
  if (issues.issues.length) {
    const unknown = [...issues.unknownFields];
    const msg = unknown.length
      ? `unknown field${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')} (schema fields: ${schema.fields.map((f) => f.name).join(', ')})${issues.sortedByCreation ? CREATION_ORDER : ''}`
      : issues.issues.map((i) => `${i.field}: ${i.message}`).join('; ');
    throw new AppError('validation_failed', `invalid query: ${msg}`, { issues: issues.issues, ...(unknown.length ? { unknownFields: unknown } : {}) });
  }
  return { limit, offset, includeTotal, filters, search, dateRange, bbox, sort, cursor, projection, compact, aggregate };
}

/** Names a web page guesses for a record's creation time. */
const CREATED_AT = /^(created_?at|created|creation_?(date|time))$/i;
/**
 * Sorting by creation time is what a page listing the newest records asks first; records have no
 * such field to sort on, but they are numbered in the order they are created.
 */
const CREATION_ORDER = '; records are numbered in the order they are created: sort=-id lists the newest first';

const NUMERIC_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

// ---------------------------------------------------------------------------------------------
// SQL

function assertSafeName(name: string): string {
  if (!FIELD_NAME_PATTERN.test(name)) throw new Error(`unsafe field name ${name}`);
  return name;
}

/**
 * Where a table's records are and how a field reads there (`tables.storage`): the shared JSONB
 * `table_records` of every hand-made Table, or a dataset's column table (service/db/column-storage.ts). Both
 * compare and order alike: text in C collation (byte order, the same on every server), numbers as
 * float8, booleans, dates as ISO text or dates (the same order).
 */
export interface RecordSource {
  /** `<relation> r` */
  from: SQL;
  /** The predicate that keeps this table's rows (the shared relation), or null. */
  scope: SQL | null;
  /** A one-time check that the table row the query was built from is current (table-rows.ts), or null. */
  guard: SQL | null;
  /** Whether the planner has statistics on each field (a column table's columns; none on JSONB expressions). */
  fieldStatistics: boolean;
  /** The typed, comparable expression of a field. */
  field(f: FieldRef): SQL;
  /** A bound value typed like `field(f)`. */
  param(f: FieldRef, v: unknown): SQL;
  eq(f: FieldRef, v: unknown): SQL;
  /** The field as text (ilike, search). */
  text(f: FieldRef): SQL;
  /** The field as answered (min/max values, group keys): dates as ISO strings. */
  output(f: FieldRef): SQL;
  /** Select list of a record page: `id` and what `rowFields` reads. */
  selectList: SQL;
  /** The same, for a page that shows only the fields `names` (`pageColumns`): its select list and how its rows read. */
  shownFields(names: ReadonlySet<string>): PageColumns;
  /** The columns a page's inner select keeps of each row, for `selectList` to be computed from (compileListQuery). */
  rowColumns: SQL;
  rowFields(row: Record<string, unknown>): Record<string, unknown>;
  /**
   * A row's fields as the JSON text an answer places unparsed: `records` the jsonb as text (the same
   * JSON up to spacing), `columns` the text the database builds of the typed columns
   * (`columnFieldsJsonExpr`), the bytes JSON.stringify writes.
   */
  fieldsJson(row: Record<string, unknown>): string;
}

/** What a page selects of each record, and how a selected row reads as the record's fields. */
export interface PageColumns {
  selectList: SQL;
  rowFields(row: Record<string, unknown>): Record<string, unknown>;
  /**
   * A shown field of a row as the JSON an answer writes for it (`answerJson`, `columnAnswerJson`),
   * unparsed; undefined when the record has none. Present on a page that shows some fields
   * (`shownFields`: the database sends each one as JSON text).
   */
  fieldJson?(row: Record<string, unknown>, name: string): string | undefined;
}

/**
 * A page of `table_records` that shows only the fields `names`: each one's JSON taken out in the
 * database (`fields->'name'`, as text, under its own name: `id` is reserved), so that neither the
 * record's other fields nor a record of the shown ones is built there, sent and parsed here.
 * A field absent from a record reads as SQL null and stays absent; a JSON null is kept.
 */
function recordsShownFields(names: readonly string[]): PageColumns {
  return shownFieldsJson(sql.raw(['r.id', ...names.map((n) => `(r.fields->'${n}')::text as "${n}"`)].join(', ')), names, answerJson);
}

/**
 * The page columns of a select list of `r.id` and each shown field's JSON text under its name (SQL
 * null where the record has none): `answer` makes a field's text the bytes an answer writes.
 */
function shownFieldsJson(selectList: SQL, names: readonly string[], answer: (json: string) => string): PageColumns {
  return {
    selectList,
    rowFields: (row) => {
      const fields: Record<string, unknown> = {};
      for (const n of names) {
        const json = row[n];
        if (typeof json === 'string') fields[n] = JSON.parse(json);
      }
      return fields;
    },
    fieldJson: (row, name) => {
      const json = row[name];
      return typeof json === 'string' ? answer(json) : undefined;
    },
  };
}

/** A number as PostgreSQL writes a jsonb number, which JSON.stringify writes alike (see `answerJson`). */
const SAME_NUMBER = /^-?(0|[1-9]\d{0,20})(\.\d*[1-9])?$/;

/**
 * A JSON value as PostgreSQL wrote it (jsonb to text), in the bytes `JSON.stringify` of the parsed
 * value writes, parsing it only where the two differ: a string, true, false and null are written
 * alike (the same escapes: `"`, `\`, the named controls, the others as lowercase `\u00XX`); a
 * number alike while JavaScript writes it without an exponent (from 1e-6 to below 1e21: a field's
 * number is stored as JSON.stringify wrote it, and jsonb keeps its digits); an object or an array
 * is spaced differently (`{"a": 1}`). A compact page of 50 records and 2 fields: ~10 µs of our
 * process less than parsing each value to write it again (docs/performance.md, issue 53).
 */
export function answerJson(json: string): string {
  const first = json.charCodeAt(0);
  if (first === 0x22 || json === 'true' || json === 'false' || json === 'null') return json;
  if ((first === 0x2d || (first >= 0x30 && first <= 0x39)) && SAME_NUMBER.test(json) && !/^-?0\.000000/.test(json)) return json;
  return JSON.stringify(JSON.parse(json));
}

/** The typed SQL expression of a field in `table_records`. */
function recordsFieldExpr(f: FieldRef): SQL {
  const text = sql.raw(`(r.fields->>'${assertSafeName(f.name)}')`);
  switch (f.type) {
    case 'number':
    case 'integer':
      return sql`${text}::float8`;
    case 'boolean':
      return sql`${text}::boolean`;
    case 'json':
      return sql.raw(`(r.fields->'${f.name}')`);
    default:
      return sql`${text} collate "C"`;
  }
}

function recordsParam(f: FieldRef, v: unknown): SQL {
  switch (f.type) {
    case 'number':
    case 'integer':
      return sql`${v}::float8`;
    case 'boolean':
      return sql`${v}::boolean`;
    default:
      return sql`${v}::text`;
  }
}

function recordsSource(tableId: string, guard: SQL | null): RecordSource {
  return {
    from: sql`table_records r`,
    scope: sql`r.table_id = ${tableId}`,
    guard,
    fieldStatistics: false,
    field: recordsFieldExpr,
    param: recordsParam,
    // Containment uses the GIN (jsonb_path_ops) index; stored values are normalised, so it is exact.
    eq: (f, v) => sql`r.fields @> ${JSON.stringify({ [f.name]: v })}::jsonb`,
    text: (f) => sql.raw(`(r.fields->>'${assertSafeName(f.name)}')`),
    output: recordsFieldExpr,
    // The fields as text: a page places them in its answer as they are (table-lists.ts), instead of
    // the driver parsing each record's JSON for the answer to encode it again.
    selectList: sql`r.id, r.fields::text as fields`,
    shownFields: (names) => recordsShownFields([...names].map(assertSafeName)),
    rowColumns: sql`r.id, r.fields`,
    rowFields: (row) => JSON.parse(row.fields as string) as Record<string, unknown>,
    fieldsJson: (row) => row.fields as string,
  };
}

const COLUMN_PARAM_TYPES: Record<FieldType, string> = {
  string: 'text',
  number: 'float8',
  integer: 'float8',
  boolean: 'boolean',
  date: 'date',
  datetime: 'timestamptz',
  json: 'jsonb',
};

function columnsSource(tableId: string, schema: TableSchema, guard: SQL | null): RecordSource {
  const column = (f: FieldRef) => sql.raw(`r.${quoteColumn(f.name)}`);
  const param = (f: FieldRef, v: unknown) => sql`${v}::`.append(sql.raw(COLUMN_PARAM_TYPES[f.type]));
  return {
    from: sql.raw(`${columnTableName(tableId)} r`),
    scope: null,
    guard,
    fieldStatistics: true,
    field: column,
    param,
    eq: (f, v) => sql`${column(f)} = ${param(f, v)}`,
    text: column,
    output: (f) => columnOutputExpr(f.name, f.type),
    // Each row's fields as JSON text written by the database (`columnFieldsJsonExpr`), placed in the
    // answer as a JSONB record's are, instead of the driver reading each typed column for the answer
    // to write it again.
    selectList: sql`r.id, ${columnFieldsJsonExpr(schema.fields)} as fields`,
    shownFields: (names) => {
      const shown = schema.fields.filter((f) => names.has(f.name));
      const selectList = sql.join([sql`r.id`, ...shown.map((f) => sql`${columnJsonExpr(f.name, f.type)} as ${sql.raw(quoteColumn(f.name))}`)], sql`, `);
      return shownFieldsJson(
        selectList,
        shown.map((f) => f.name),
        columnAnswerJson,
      );
    },
    rowColumns: sql`r.*`,
    rowFields: (row) => JSON.parse(row.fields as string) as Record<string, unknown>,
    fieldsJson: (row) => columnAnswerJson(row.fields as string),
  };
}

/** The record source of a table, from its storage; `guard` is added to every query's conditions. */
export function recordSource(table: Pick<TableRow, 'id' | 'storage' | 'schema'>, guard: SQL | null = null): RecordSource {
  return table.storage === 'columns' ? columnsSource(table.id, table.schema, guard) : recordsSource(table.id, guard);
}

function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function filterSql(src: RecordSource, f: Filter): SQL {
  const e = src.field(f.field);
  const p = (v: unknown) => src.param(f.field, v);
  switch (f.op) {
    case 'eq':
      return src.eq(f.field, f.value);
    case 'neq':
      return sql`${e} <> ${p(f.value)}`;
    case 'gt':
      return sql`${e} > ${p(f.value)}`;
    case 'gte':
      return sql`${e} >= ${p(f.value)}`;
    case 'lt':
      return sql`${e} < ${p(f.value)}`;
    case 'lte':
      return sql`${e} <= ${p(f.value)}`;
    case 'in':
      return sql`${e} in (${sql.join((f.value as unknown[]).map(p), sql`, `)})`;
    case 'isnull':
      return f.value ? sql`${src.text(f.field)} is null` : sql`${src.text(f.field)} is not null`;
    case 'ilike': {
      const pattern = String(f.value).replace(/\*/g, '%');
      return sql`${src.text(f.field)} ilike ${pattern}`;
    }
  }
}

/** Keyset predicate "strictly after the cursor row" for mixed directions; asc puts nulls last, desc first. */
function cursorSql(src: RecordSource, sort: SortKey[], cursor: { values: unknown[]; id: number }): SQL {
  const ors: SQL[] = [];
  const eqs: SQL[] = [];
  sort.forEach((k, i) => {
    if (k.field === 'id') {
      ors.push(sql.join([...eqs, k.dir === 'asc' ? sql`r.id > ${cursor.id}` : sql`r.id < ${cursor.id}`], sql` and `));
      return;
    }
    const e = src.field(k.field);
    const v = cursor.values[i];
    let after: SQL | null;
    if (v === null || v === undefined) after = k.dir === 'asc' ? null : sql`${e} is not null`;
    else after = k.dir === 'asc' ? sql`(${e} > ${src.param(k.field, v)} or ${e} is null)` : sql`${e} < ${src.param(k.field, v)}`;
    if (after) ors.push(sql.join([...eqs, after], sql` and `));
    eqs.push(v === null || v === undefined ? sql`${e} is null` : sql`${e} = ${src.param(k.field, v)}`);
  });
  return sql`(${sql.join(
    ors.map((o) => sql`(${o})`),
    sql` or `,
  )})`;
}

/**
 * The statement's conditions on records (the row check is not one of them: `checked`), in three
 * parts: the table's scope, what narrows the records (filters, search, date range, box), and the
 * cursor's keyset condition.
 */
function conditionsOf(src: RecordSource, plan: TableQueryPlan, withCursor = true): { scope: SQL[]; narrowing: SQL[]; cursor: SQL[] } {
  const narrowing: SQL[] = [];
  for (const f of plan.filters) narrowing.push(filterSql(src, f));
  if (plan.search?.fields.length) {
    const pattern = `%${escapeLike(plan.search.q)}%`;
    narrowing.push(
      sql`(${sql.join(
        plan.search.fields.map((f) => sql`${src.text(f)} ilike ${pattern}`),
        sql` or `,
      )})`,
    );
  }
  if (plan.dateRange) {
    const { field } = plan.dateRange;
    const e = src.field(field);
    if (plan.dateRange.from) narrowing.push(sql`${e} >= ${src.param(field, plan.dateRange.from)}`);
    if (plan.dateRange.to) narrowing.push(sql`${e} <= ${src.param(field, plan.dateRange.to)}`);
  }
  if (plan.bbox) {
    const { lon, lat, minLon, minLat, maxLon, maxLat } = plan.bbox;
    const x = src.field(lon);
    const y = src.field(lat);
    narrowing.push(sql`${y} between ${minLat}::float8 and ${maxLat}::float8`);
    // A box crossing the antimeridian (minLon > maxLon) wraps around.
    narrowing.push(
      minLon <= maxLon ? sql`${x} between ${minLon}::float8 and ${maxLon}::float8` : sql`(${x} >= ${minLon}::float8 or ${x} <= ${maxLon}::float8)`,
    );
  }
  return { scope: src.scope ? [src.scope] : [], narrowing, cursor: withCursor && plan.cursor ? [cursorSql(src, plan.sort, plan.cursor)] : [] };
}

const and = (parts: SQL[]): SQL => (parts.length ? sql.join(parts, sql` and `) : sql`true`);

/** The statement's conditions on records, all together. */
function whereSql(src: RecordSource, plan: TableQueryPlan, withCursor = true): SQL {
  const { scope, narrowing, cursor } = conditionsOf(src, plan, withCursor);
  return and([...scope, ...narrowing, ...cursor]);
}

function orderSql(src: RecordSource, sort: SortKey[]): SQL {
  return sql.join(
    sort.map((k) =>
      k.field === 'id'
        ? k.dir === 'asc'
          ? sql`r.id asc`
          : sql`r.id desc`
        : k.dir === 'asc'
          ? sql`${src.field(k.field)} asc nulls last`
          : sql`${src.field(k.field)} desc nulls first`,
    ),
    sql`, `,
  );
}

/**
 * `inner` (a subquery PostgreSQL does not flatten into the outer select: it has a LIMIT or an
 * OFFSET) under the source's row check, as the outer select's only condition. The check is
 * uncorrelated: an InitPlan run once, in a one-time filter at the top of the plan, before anything
 * below it reads a record. Among the scan's conditions, the same filter sat in a Result node above
 * the scan that every matching row passed through (an aggregate over 20,000 records: 20,000 rows;
 * docs/performance.md, issue 53).
 */
function checked(src: RecordSource, select: SQL, inner: SQL): SQL {
  return src.guard ? sql`select ${select} from (${inner}) r where ${src.guard}` : sql`select ${select} from (${inner}) r`;
}

/**
 * A page's limit or offset, written in the statement's text: PostgreSQL plans a statement whose
 * limit is a parameter for a tenth of its rows, so the plan it would reuse for a page of 51 (a
 * generic plan, `reusePlansOn`) was costed as reading 100,000 of 1,000,000 records and never chosen:
 * every read was planned again (docs/performance.md, issue 53). Parsed integers only.
 */
function integer(n: number): SQL {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`not a limit or offset: ${n}`);
  return sql.raw(String(n));
}

/**
 * The page query; fetches limit+1 rows to know whether a next page exists. `searchWindow`: the
 * records a substring search looks at first (`windowFirst`; 0: none, tests compare both). The answer's columns
 * (the fields as text, dates formatted) are computed in the outer select, for the kept rows only:
 * in one flat select PostgreSQL computes them for every matching row before the sort keeps a page
 * (docs/performance.md, issue 53). The subquery's order is the page's: nothing above it reorders.
 */
export function compileListQuery(src: RecordSource, plan: TableQueryPlan, searchWindow = SEARCH_WINDOW, columns = pageColumns(src, plan)): SQL {
  const page = sql`select ${src.rowColumns} from ${src.from} where ${whereSql(src, plan)} order by ${orderSql(src, plan.sort)} limit ${integer(plan.limit + 1)} offset ${integer(plan.cursor ? 0 : plan.offset)}`;
  return checked(src, columns.selectList, searchWindow > 0 && searchesWindowFirst(plan) ? windowFirst(src, plan, page, searchWindow) : page);
}

/** What a page of `plan` selects and how its rows read: a projected page (fields=…, compact or not) reads the fields it shows, and those its cursor holds. */
export function pageColumns(src: RecordSource, plan: TableQueryPlan): PageColumns {
  if (!plan.projection) return { selectList: src.selectList, rowFields: src.rowFields };
  return src.shownFields(new Set([...plan.projection, ...plan.sort.flatMap((k) => (k.field === 'id' ? [] : [k.field.name]))]));
}

/**
 * Records a substring search (`q`, an `ilike` filter) looks at first, in id order, before the
 * statement the planner would choose on its own (`windowFirst`). Walking them costs what testing
 * the pattern on each costs (~0.5–1 µs a record on PostgreSQL 15: 10–20 ms), which is all a search
 * matching fewer than a page's records among them pays on top of that statement.
 */
export const SEARCH_WINDOW = 20_000;

/**
 * A page in id order (the default order) narrowed by a substring pattern, from its first record
 * (with or without a cursor, not at an offset): the read `windowFirst` answers.
 */
export function searchesWindowFirst(plan: TableQueryPlan): boolean {
  const [key, ...more] = plan.sort;
  const substring = (plan.search?.fields.length ?? 0) > 0 || plan.filters.some((f) => f.op === 'ilike');
  return substring && key?.field === 'id' && more.length === 0 && (plan.cursor !== undefined || plan.offset === 0);
}

/**
 * A substring search's page in id order: first among the next `size` records in that order
 * (SEARCH_WINDOW), then, only when they hold fewer matches than the page and more records follow
 * them, by `page` (the same statement without this, which then answers alone: the same rows, in the
 * same order).
 *
 * Why: PostgreSQL cannot estimate how many records `ilike '%…%'` matches (it has no statistics on
 * substrings). It guesses few (42 of 1,111 at 1,000,000 records) and plans a scan of every record
 * and a sort, where walking the records in id order would have stopped at the page's last match
 * (12,000 records: 230 ms against 9 ms). A prepared statement's generic plan makes the other
 * mistake: it walks in id order whatever the pattern, through every record when few match (1.1 s
 * against 0.6–0.85 s for the scan). Here the window answers a search with matches near the start,
 * and a rare pattern pays the window's walk on top of the plan it has today; a table no larger than
 * the window is answered by the window alone. docs/performance.md ("Table API reads", issue 53).
 *
 * `p` is the window's matches, at most a page; `c` says whether they answer: a whole page of them,
 * or no record after the window (an index-only probe of the key, run only when the page is short).
 * Append answers its branches in turn, and only one of the two answers (the other's one-time filter
 * is false, decided once per statement): the order is that branch's, the walk's or `page`'s.
 */
function windowFirst(src: RecordSource, plan: TableQueryPlan, page: SQL, size: number): SQL {
  const { scope, narrowing, cursor } = conditionsOf(src, plan);
  const order = plan.sort[0]!.dir === 'asc' ? sql`r.id asc` : sql`r.id desc`;
  const around = and([...scope, ...cursor]);
  const limit = plan.limit + 1;
  const window = sql`select ${src.rowColumns} from ${src.from} where ${around} order by ${order} limit ${size}`;
  const after = sql`select from ${src.from} where ${around} order by ${order} offset ${size}`;
  return sql`with p as (select ${src.rowColumns} from (${window}) r where ${and(narrowing)} limit ${limit}), c as (select count(*) = ${limit} or not exists (${after}) as complete from p) select ${src.rowColumns} from p r where (select complete from c) union all select ${src.rowColumns} from (${page}) r where not (select complete from c)`;
}

export function compileCountQuery(src: RecordSource, plan: TableQueryPlan): SQL {
  return checked(src, sql`r.n`, sql`select count(*)::int as n from ${src.from} where ${whereSql(src, plan, false)} offset 0`);
}

export function compileAggregateQuery(src: RecordSource, plan: TableQueryPlan): SQL {
  const a = plan.aggregate!;
  // sum/avg/count take the typed value; min/max answer the value as the records show it.
  const target = a.field ? (a.fn === 'min' || a.fn === 'max' ? src.output(a.field) : src.field(a.field)) : null;
  let value: SQL;
  if (a.fn === 'count') value = target ? sql`count(${target})::float8` : sql`count(*)::float8`;
  else value = sql`${sql.raw(a.fn)}(${target!})`;
  const where = whereSql(src, plan, false);
  if (!a.groupBy) return checked(src, sql`r.value, r.count`, sql`select ${value} as value, count(*)::int as count from ${src.from} where ${where} offset 0`);
  const key = src.output(a.groupBy);
  const groups = sql`order by key asc nulls last limit ${TABLE_LIMITS.maxGroups + 1}`;
  if (src.fieldStatistics) {
    // A column table: grouped as written (its statistics tell the planner how many groups there are).
    return checked(
      src,
      sql`r.key, r.value, r.count`,
      sql`select ${key} as key, ${value} as value, count(*)::int as count from ${src.from} where ${where} group by 1 ${groups}`,
    );
  }
  // The planner has no statistics on a JSONB expression and assumes one group per row, which picks a
  // sort of every row (spilling to disk on big tables). The OFFSET 0 fence makes it estimate few
  // groups and hash them instead: memory follows the real number of groups.
  const v = target ?? sql`null`;
  const outer = a.fn === 'count' ? (target ? sql`count(s.v)::float8` : sql`count(*)::float8`) : sql`${sql.raw(a.fn)}(s.v)`;
  return checked(
    src,
    sql`r.key, r.value, r.count`,
    sql`select s.key, ${outer} as value, count(*)::int as count from (select ${key} as key, ${v} as v from ${src.from} where ${where} offset 0) s group by s.key ${groups}`,
  );
}

/** The cursor of the row after which the next page starts. */
export function nextCursorFor(plan: TableQueryPlan, last: { id: number; fields: Record<string, unknown> }): string {
  const values = plan.sort
    .filter((k) => k.field !== 'id')
    .map((k) => (k.field as FieldRef).name)
    .map((n) => last.fields[n] ?? null);
  return encodeCursor({ s: sortSignature(plan.sort), v: values, id: last.id });
}
