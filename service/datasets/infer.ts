import { DataFileError, type SourceRecord } from './records.js';

/** The Table field types (service/tables): a dataset's schema uses the same ones. */
export type FieldType = 'string' | 'number' | 'integer' | 'boolean' | 'date' | 'datetime' | 'json';

export interface InferredField {
  /** Safe field name used by the Table API (`[A-Za-z_][A-Za-z0-9_]*`, ≤ 63 chars, unique). */
  name: string;
  /** The column's name in the file, as written. */
  label: string;
  type: FieldType;
}

export interface InferredSchema {
  fields: InferredField[];
  /** Source column name → field name. */
  nameOf: Map<string, string>;
  records: number;
}

/**
 * How much a parser's values already carry their types. `text` (CSV): every value is a string and
 * numbers, booleans and dates are recognised in it. `typed` (JSON, XLSX, Parquet, DBF): a string
 * stays a string unless it is an ISO date or date-time (JSON has no date type).
 */
export type ValueSource = 'text' | 'typed';

const INTEGER = /^[+-]?(0|[1-9]\d{0,14})$/;
const NUMBER = /^[+-]?((0|[1-9]\d*)(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;
const DIGITS = /^[+-]?\d+$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(:(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** A calendar date PostgreSQL can store too (year 1 or later: there is no year 0 in SQL). */
export function validDate(y: string | number, m: string | number, d: string | number): boolean {
  const year = Number(y);
  const month = Number(m);
  const day = Number(d);
  if (!(year >= 1 && month >= 1 && month <= 12 && day >= 1)) return false;
  if (month === 2) return day <= ((year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28);
  return day <= (month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31);
}

/** The digit at `i` of `s` as a number; NaN when it is not a digit. */
function digitAt(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : NaN;
}

/** `YYYY-MM-DD`, a real date (checked by character codes: this runs for every date value of a big file). */
function isIsoDate(s: string): boolean {
  if (s.length !== 10 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return false;
  const y = digitAt(s, 0) * 1000 + digitAt(s, 1) * 100 + digitAt(s, 2) * 10 + digitAt(s, 3);
  return validDate(y, digitAt(s, 5) * 10 + digitAt(s, 6), digitAt(s, 8) * 10 + digitAt(s, 9)); // NaN fails there
}

function isIsoDateTime(s: string): boolean {
  const m = DATETIME.exec(s);
  if (!m || !validDate(m[1]!, m[2]!, m[3]!)) return false;
  const zone = m[9] && m[9].length > 1 ? /^[+-](\d{2}):?(\d{2})$/.exec(m[9]) : null;
  if (zone && (Number(zone[1]) > 15 || Number(zone[2]) > 59)) return false;
  return Number(m[4]) < 24 && Number(m[5]) < 60 && (m[7] === undefined || Number(m[7]) < 60);
}

/** Normalises a date-time string to ISO 8601 UTC; a value without a zone is taken as UTC. */
function toIsoDateTime(s: string): string {
  const m = DATETIME.exec(s)!;
  const zone = m[9] ? (m[9].toUpperCase() === 'Z' ? 'Z' : m[9].length === 5 ? `${m[9].slice(0, 3)}:${m[9].slice(3)}` : m[9]) : 'Z';
  // Milliseconds, rounded as PostgreSQL rounds into a timestamptz(3) column (the CSV fast path).
  const ms = m[8] ? Math.floor((Math.round(Number(`0${m[8].slice(0, 10)}`) * 1e6) + 500) / 1000) : 0;
  return new Date(Date.parse(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[7] ?? '00'}${zone}`) + ms).toISOString();
}

function isMidnightUtc(d: Date): boolean {
  return d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0 && d.getUTCMilliseconds() === 0;
}

/** The narrowest type of one value; null for an empty value (which fits every type). */
export function typeOfValue(value: unknown, source: ValueSource): FieldType | null {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string': {
      const s = value.trim();
      if (s === '') return null;
      if (source === 'text') {
        if (INTEGER.test(s)) return 'integer';
        // Leading zeros (ZIP codes, ids) and integers past 2^53 stay text: a number would change them.
        if (DIGITS.test(s)) return 'string';
        if (NUMBER.test(s)) return Number.isFinite(Number(s)) ? 'number' : 'string';
        const lower = s.toLowerCase();
        if (lower === 'true' || lower === 'false') return 'boolean';
      }
      if (isIsoDate(s)) return 'date';
      if (isIsoDateTime(s)) return 'datetime';
      return 'string';
    }
    case 'number':
      if (!Number.isFinite(value)) return null;
      return Number.isSafeInteger(value) ? 'integer' : 'number';
    case 'bigint':
      // Beyond 2^53 a number would silently lose digits: keep the exact decimal text instead.
      return value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= BigInt(Number.MIN_SAFE_INTEGER) ? 'integer' : 'string';
    case 'boolean':
      return 'boolean';
    case 'object':
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) return null;
        // Years 1–9999 only: what ISO text and a PostgreSQL date both hold; others stay text.
        if (value.getUTCFullYear() < 1 || value.getUTCFullYear() > 9999) return 'string';
        return isMidnightUtc(value) ? 'date' : 'datetime';
      }
      if (value instanceof Uint8Array) return 'string';
      return 'json';
    default:
      return 'string';
  }
}

/** The least type holding both (integer ⊂ number, date ⊂ datetime, anything ⊂ json when one is json, else string). */
export function widen(a: FieldType | null, b: FieldType | null): FieldType | null {
  if (a === null) return b;
  if (b === null || a === b) return a;
  const pair = new Set([a, b]);
  if (pair.has('integer') && pair.has('number')) return 'number';
  if (pair.has('date') && pair.has('datetime')) return 'datetime';
  if (pair.has('json')) return 'json';
  return 'string';
}

const RESERVED_NAMES = new Set(['id', 'createdat', 'updatedat']);
const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** A Table-safe field name from a column header: `First Name` → `First_Name`, `2019` → `_2019`. */
export function fieldNameFor(label: string, index: number, taken: Set<string>): string {
  let base = label
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (base === '') base = `column_${index + 1}`;
  if (/^[0-9]/.test(base)) base = `_${base}`;
  // The Table record envelope owns these names (id, createdAt, updatedAt).
  if (RESERVED_NAMES.has(base.toLowerCase())) base = `source_${base}`;
  base = base.slice(0, 60);
  let name = base;
  for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base.slice(0, 60 - String(n).length)}_${n}`;
  if (!SAFE_NAME.test(name)) throw new Error(`bad field name ${name}`);
  taken.add(name.toLowerCase());
  return name;
}

/**
 * Pass one of a conversion: reads every record once (so a parse error anywhere is found before a
 * single row is written) and infers each column's type over the whole file, not a sample.
 */
export class SchemaInferrer {
  private readonly types = new Map<string, FieldType | null>();
  private count = 0;

  get records(): number {
    return this.count;
  }

  constructor(
    private readonly source: ValueSource,
    private readonly maxColumns: number,
  ) {}

  add(record: SourceRecord): void {
    this.count++;
    for (const key in record.fields) {
      const t = typeOfValue(record.fields[key], this.source);
      const prev = this.types.get(key);
      if (prev === undefined) {
        if (this.types.size >= this.maxColumns) {
          throw new DataFileError(`more than ${this.maxColumns} columns`, { row: record.row, line: record.line, column: key });
        }
        this.types.set(key, t);
      } else if (prev !== t && t !== null) {
        this.types.set(key, widen(prev, t));
      }
    }
  }

  result(): InferredSchema {
    return schemaOf(this.types, this.count);
  }
}

/** True when a value of `v`'s type leaves a column of `type` as it is (null fits every type). */
export function fitsType(type: FieldType, v: unknown, source: ValueSource): boolean {
  // The common cases first (this runs for every value of a guessed schema); the rule itself below.
  if (type === 'json' || v === null || v === undefined) return true;
  if (typeof v === 'number') return type === 'number' || type === 'string' || (type === 'integer' && Number.isSafeInteger(v)) || !Number.isFinite(v);
  if (typeof v === 'boolean') return type === 'boolean' || type === 'string';
  if (typeof v === 'string' && type === 'string') return true;
  const t = typeOfValue(v, source);
  return t === null || t === type || widen(type, t) === type;
}

/** Same field names and types, in the same order. */
export function sameFields(a: InferredSchema, b: InferredSchema): boolean {
  return a.fields.length === b.fields.length && a.fields.every((f, i) => f.name === b.fields[i]?.name && f.type === b.fields[i]?.type);
}

/** The schema of columns (label → inferred type, in file order): Table-safe names, unknown types as string. */
export function schemaOf(types: Iterable<[string, FieldType | null]>, records: number): InferredSchema {
  const taken = new Set<string>();
  const nameOf = new Map<string, string>();
  const fields: InferredField[] = [];
  let i = 0;
  for (const [label, type] of types) {
    const name = fieldNameFor(label, i++, taken);
    nameOf.set(label, name);
    fields.push({ name, label: label.trim() === '' ? name : label, type: type ?? 'string' });
  }
  return { fields, nameOf, records };
}

function fail(record: SourceRecord, column: string, type: FieldType, value: unknown): never {
  throw new DataFileError(`value ${JSON.stringify(String(value)).slice(0, 80)} is not a ${type}`, { row: record.row, line: record.line, column });
}

/** Turns one source value into the stored value of a field of `type`; null for empty. */
export function coerceValue(value: unknown, type: FieldType, source: ValueSource, record: SourceRecord, column: string): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  if (typeof value === 'string' && value.trim() === '' && type !== 'string') return null;
  if (value instanceof Date && Number.isNaN(value.getTime())) return null;
  switch (type) {
    case 'string':
      if (typeof value === 'string') return value === '' ? null : value;
      if (value instanceof Date) return value.toISOString();
      if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
      if (typeof value === 'object') return JSON.stringify(value, jsonReplacer);
      return String(value);
    case 'integer':
    case 'number': {
      if (typeof value === 'number') return value;
      if (typeof value === 'bigint') return Number(value);
      if (typeof value === 'string' && source === 'text' && NUMBER.test(value.trim())) return Number(value.trim());
      return fail(record, column, type, value);
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string' && source === 'text') {
        const lower = value.trim().toLowerCase();
        if (lower === 'true') return true;
        if (lower === 'false') return false;
      }
      return fail(record, column, type, value);
    case 'date':
      if (value instanceof Date) return value.toISOString().slice(0, 10);
      if (typeof value === 'string' && isIsoDate(value.trim())) return value.trim();
      return fail(record, column, type, value);
    case 'datetime':
      if (value instanceof Date) return value.toISOString();
      if (typeof value === 'string') {
        const s = value.trim();
        if (isIsoDate(s)) return `${s}T00:00:00.000Z`;
        if (isIsoDateTime(s)) return toIsoDateTime(s);
      }
      return fail(record, column, type, value);
    case 'json':
      return toJsonValue(value);
  }
}

function jsonReplacer(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  return v;
}

/** A JSON-safe copy (BigInt → number or decimal string, Date → ISO, bytes → base64). */
export function toJsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = toJsonValue(v);
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value;
}

/** Pass two: a source record as Table field values under the inferred schema. */
export function coerceRecord(record: SourceRecord, schema: InferredSchema, types: Map<string, FieldType>, source: ValueSource): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in record.fields) {
    const name = schema.nameOf.get(key);
    if (name === undefined) throw new DataFileError('column appeared that was not there on the first read', { row: record.row, column: key });
    const v = coerceValue(record.fields[key], types.get(name)!, source, record, key);
    if (v !== null) out[name] = v;
  }
  return out;
}
