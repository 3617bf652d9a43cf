import { TABLE_LIMITS, type FieldType, type TableSchema } from '../../shared/tables/schema.js';
import { AppError } from '../kernel/app-error.js';

/** One problem with one value, named by its path (`records.3.price`, `fields.price`). */
export interface FieldIssue {
  field: string;
  message: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:?\d{2})?$/i;
const NUMERIC = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?$/i;

export function isValidDate(text: string): boolean {
  const m = DATE.exec(text);
  if (!m) return false;
  const d = new Date(`${text}T00:00:00.000Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === text;
}

/**
 * A datetime as the canonical `YYYY-MM-DDTHH:mm:ss.sssZ` (UTC) so that text order is time order.
 * Accepts ISO 8601 with or without a zone (no zone = UTC) and epoch milliseconds.
 */
export function normaliseDatetime(value: unknown): string | null {
  let d: Date;
  if (typeof value === 'number' && Number.isFinite(value)) d = new Date(value);
  else if (typeof value === 'string') {
    const m = DATETIME.exec(value.trim());
    if (!m) return isValidDate(value.trim()) ? `${value.trim()}T00:00:00.000Z` : null;
    const zone = m[8] ? (m[8].toUpperCase() === 'Z' ? 'Z' : m[8].length === 5 ? `${m[8].slice(0, 3)}:${m[8].slice(3)}` : m[8]) : 'Z';
    const frac = m[7] ? `.${m[7].slice(0, 3).padEnd(3, '0')}` : '.000';
    if (!isValidDate(`${m[1]}-${m[2]}-${m[3]}`) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59) return null;
    d = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6] ?? '00'}${frac}${zone}`);
  } else return null;
  if (Number.isNaN(d.getTime())) return null;
  const y = d.getUTCFullYear();
  if (y < 0 || y > 9999) return null;
  return d.toISOString();
}

/**
 * Converts one value to the stored form of `type`, or returns an error message. Numbers and booleans
 * may arrive as text (HTML forms, CSV); text that is a valid number/boolean is converted.
 */
export function normaliseValue(type: FieldType, value: unknown): { ok: true; value: unknown } | { ok: false; message: string } {
  switch (type) {
    case 'string':
      if (typeof value === 'string') return { ok: true, value };
      if (typeof value === 'number' || typeof value === 'boolean') return { ok: true, value: String(value) };
      return { ok: false, message: 'expected a string' };
    case 'number':
    case 'integer': {
      let n: number;
      if (typeof value === 'number') n = value;
      else if (typeof value === 'string' && NUMERIC.test(value.trim())) n = Number(value.trim());
      else return { ok: false, message: `expected ${type === 'integer' ? 'an integer' : 'a number'}` };
      if (!Number.isFinite(n)) return { ok: false, message: 'expected a finite number' };
      if (type === 'integer' && !Number.isSafeInteger(n)) return { ok: false, message: 'expected an integer (at most 2^53-1 in size)' };
      return { ok: true, value: Object.is(n, -0) ? 0 : n };
    }
    case 'boolean':
      if (typeof value === 'boolean') return { ok: true, value };
      if (value === 'true' || value === 'false') return { ok: true, value: value === 'true' };
      return { ok: false, message: 'expected true or false' };
    case 'date':
      if (typeof value === 'string' && isValidDate(value.trim())) return { ok: true, value: value.trim() };
      return { ok: false, message: 'expected a date YYYY-MM-DD' };
    case 'datetime': {
      const v = normaliseDatetime(value);
      return v ? { ok: true, value: v } : { ok: false, message: 'expected an ISO 8601 datetime (e.g. 2024-05-01T12:00:00Z) or epoch milliseconds' };
    }
    case 'json':
      return { ok: true, value };
  }
}

export type RecordMode = 'full' | 'partial';

/**
 * Validates and normalises one record against the schema. `full` (create, replace) checks required
 * fields; `partial` (PATCH) only the given ones. Unknown fields are errors. Issues are pushed with
 * `prefix` (e.g. `records.3.`) so a batch names exactly which record and field failed.
 */
export function normaliseRecord(schema: TableSchema, input: unknown, mode: RecordMode, prefix: string, issues: FieldIssue[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    issues.push({ field: prefix.replace(/\.$/, '') || '(record)', message: 'expected an object of field name to value' });
    return out;
  }
  const values = input as Record<string, unknown>;
  const known = new Map(schema.fields.map((f) => [f.name, f]));
  for (const key of Object.keys(values)) {
    if (!known.has(key))
      issues.push({ field: `${prefix}${key}`, message: `unknown field "${key}" (schema fields: ${schema.fields.map((f) => f.name).join(', ')})` });
  }
  for (const f of schema.fields) {
    const has = Object.hasOwn(values, f.name);
    const v = has ? values[f.name] : undefined;
    if (v === undefined || v === null) {
      if (f.required && (mode === 'full' || has)) issues.push({ field: `${prefix}${f.name}`, message: 'required' });
      else if (has && v === null) out[f.name] = null;
      continue;
    }
    const r = normaliseValue(f.type, v);
    if (r.ok) out[f.name] = r.value;
    else issues.push({ field: `${prefix}${f.name}`, message: r.message });
  }
  if (issues.length === 0 && Buffer.byteLength(JSON.stringify(out)) > TABLE_LIMITS.maxRecordBytes) {
    issues.push({ field: prefix.replace(/\.$/, '') || '(record)', message: `record is larger than ${TABLE_LIMITS.maxRecordBytes} bytes of JSON` });
  }
  return out;
}

export function recordValidationError(issues: FieldIssue[], what: string): AppError {
  const shown = issues.slice(0, 20);
  const summary = shown.map((i) => `${i.field}: ${i.message}`).join('; ');
  return new AppError(
    'validation_failed',
    `invalid ${what}: ${summary}${issues.length > shown.length ? ` (and ${issues.length - shown.length} more)` : ''}; nothing was written`,
    {
      issues: shown,
      issueCount: issues.length,
    },
  );
}

/** Validates a batch: all or nothing. Throws a 400 naming every bad field (first 20). */
export function normaliseRecords(schema: TableSchema, records: unknown[], mode: RecordMode = 'full', prefix = 'records'): Record<string, unknown>[] {
  const issues: FieldIssue[] = [];
  const out = records.map((r, i) => normaliseRecord(schema, r, mode, `${prefix}.${i}.`, issues));
  if (issues.length) throw recordValidationError(issues, records.length === 1 ? 'record' : 'records');
  return out;
}
