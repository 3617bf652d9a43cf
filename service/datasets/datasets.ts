import fsp from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { and, asc, eq, like, sql } from 'drizzle-orm';
import { TABLE_LIMITS, type TableSchema } from '../../shared/tables/schema.js';
import type { DbOrTx } from '../db/client.js';
import { isUniqueViolation, onlyRow } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { datasets, tables } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import { decodeBase64Field } from '../http/base64-field.js';
import type { ConvertDatasetUploadBody, CreateDatasetBody } from '../../shared/account-api/datasets.js';
import { SLUG_PATTERN } from '../sites/slugs.js';
import type { SiteRow } from '../sites/sites.js';
import { createTable, deleteTable, promoteTable, tableSlugFromName, tableUrls } from '../tables/tables.js';
import { detectKind, kindInfo, sniffMismatch, ACCEPTED_KINDS } from './formats.js';
import { sameFields, type FieldType, type InferredSchema } from './infer.js';
import { firstPass, loadColumns, type FirstPass } from './load.js';
import { blobOpener, prepareDataFile } from './pipeline.js';
import { DataFileError, DEFAULT_PARSE_LIMITS, SheetNotFound, type DataFileKind, type ParseLimits } from './records.js';
import { assertUploadToken, dropUpload, getSiteUpload, storeInlineUpload } from './uploads.js';

export type DatasetRow = typeof datasets.$inferSelect;

export interface DatasetView {
  id: string;
  slug: string;
  name: string;
  format: string;
  fileName: string;
  /** The Table (kind `dataset`) that serves the records. */
  tableId: string;
  /** `{table_base_url}`: `{site_host}/api/data/<site_slug>/<slug>`. */
  url: string;
  pathUrl: string;
  recordCount: number;
  fields: { name: string; label: string; type: FieldType }[];
  sourceBytes: number;
  createdAt: string;
  updatedAt: string;
}

export interface ConvertInput {
  key: string;
  fileName: string;
  name?: string;
  slug?: string;
  replaceExisting?: boolean;
  /** XLSX: the sheet to read (default: the first). */
  sheet?: string;
}

/** Everything decided before payment; `convertDataFile` does the work. */
export interface ConvertPlan {
  key: string;
  fileName: string;
  kind: DataFileKind;
  name: string;
  slug: string;
  sourceBytes: number;
  sheet?: string;
  /** The dataset being replaced (replaceExisting with a taken slug). */
  replacing: DatasetRow | null;
  /** The slug derived from the name when it was taken and a free one was picked instead. */
  slugTaken?: string;
}

function parseLimits(deps: Deps): ParseLimits {
  return { ...DEFAULT_PARSE_LIMITS, maxRecords: deps.config.datasets.maxRecords, maxColumns: TABLE_LIMITS.maxFields };
}

export function dataFileInvalid(fileName: string, kind: DataFileKind, e: DataFileError): AppError {
  if (e instanceof SheetNotFound) {
    return new AppError('validation_failed', `${fileName}: ${e.message}. Nothing was loaded.`, { issues: [{ field: 'sheet', message: e.message }] });
  }
  return new AppError('data_file_invalid', `${fileName} (${kindInfo(kind).label}) could not be converted: ${e.described}. Nothing was loaded.`, {
    format: kind,
    ...e.location,
    reason: e.message,
  });
}

function tableSchemaOf(schema: InferredSchema): TableSchema {
  return { fields: schema.fields.map((f) => ({ name: f.name, label: f.label.slice(0, 200), type: f.type })) };
}

function baseName(fileName: string): string {
  return (fileName.split(/[\\/]/).pop() ?? fileName).replace(/\.[A-Za-z0-9]+$/, '') || fileName;
}

/**
 * The free checks of a conversion (before payment): the key is an upload slot of this site, the
 * file arrived with the declared size, its first bytes match its kind, and the slug is usable
 * (taken by a dataset → 409 unless replaceExisting; taken by a hand-made Table → always 409).
 */
export async function planConversion(deps: Deps, site: SiteRow, input: ConvertInput): Promise<ConvertPlan> {
  const upload = await getSiteUpload(deps.db, site.id, input.key);
  // The name given now decides; a name without a known extension keeps the kind declared at upload.
  const kind = detectKind(input.fileName) ?? (upload.format as DataFileKind);
  if (!kind) {
    throw new AppError('validation_failed', `"${input.fileName}" is not a data file kind we convert; accepted: ${ACCEPTED_KINDS}`, {
      issues: [{ field: 'fileName', message: 'unsupported kind' }],
    });
  }
  const info = await deps.blobs.head(input.key);
  if (!info) {
    throw new AppError(
      'not_uploaded',
      `nothing has been uploaded to "${input.key}" yet${upload.strategy === 'multipart' ? '; upload every part, then call complete_data_file_multipart_upload' : '; PUT the file to the upload URL first'}`,
      {
        issues: [{ field: 'key', message: 'not uploaded yet' }],
      },
    );
  }
  if (info.size !== upload.declaredBytes) {
    throw new AppError('validation_failed', `the uploaded file is ${info.size} bytes; ${upload.declaredBytes} were declared`, {
      issues: [{ field: 'key', message: 'size mismatch' }],
    });
  }
  const stream = await deps.blobs.getStream(input.key);
  if (stream) {
    const head: Buffer[] = [];
    let n = 0;
    for await (const c of stream as AsyncIterable<Buffer>) {
      head.push(c);
      n += c.length;
      if (n >= 4096) break;
    }
    stream.destroy();
    const mismatch = sniffMismatch(kind, Buffer.concat(head));
    if (mismatch) throw dataFileInvalid(input.fileName, kind, new DataFileError(`the file is ${mismatch}`));
  }
  const name = (input.name ?? baseName(input.fileName)).trim().slice(0, 200) || 'dataset';
  let slug: string;
  if (input.slug !== undefined) {
    slug = input.slug.trim().toLowerCase();
    if (!SLUG_PATTERN.test(slug)) {
      throw new AppError('validation_failed', 'invalid slug: use 1–63 lower-case letters, digits and inner hyphens', {
        issues: [{ field: 'slug', message: 'not a slug' }],
      });
    }
  } else slug = tableSlugFromName(name);
  let replacing: DatasetRow | null = null;
  const taken = async (s: string) => {
    const [t] = await deps.db
      .select({ id: tables.id, kind: tables.kind })
      .from(tables)
      .where(and(eq(tables.siteId, site.id), eq(tables.slug, s)));
    return t ?? null;
  };
  let holder = await taken(slug);
  const derived = slug;
  if (holder && input.slug === undefined && !input.replaceExisting) {
    const base = slug.slice(0, 58);
    for (let i = 2; holder; i++) {
      slug = `${base}-${i}`;
      holder = await taken(slug);
    }
  }
  if (holder) {
    if (holder.kind !== 'dataset') {
      throw new AppError('slug_taken', `"${slug}" is a Table of this app, not a dataset; choose another slug`, { slug });
    }
    if (!input.replaceExisting) {
      throw new AppError('slug_taken', `a dataset "${slug}" exists; pass replaceExisting: true to replace its data, or choose another slug`, { slug });
    }
    [replacing = null] = await deps.db
      .select()
      .from(datasets)
      .where(and(eq(datasets.siteId, site.id), eq(datasets.tableId, holder.id)));
    if (!replacing) throw new AppError('slug_taken', `"${slug}" is taken; choose another slug`, { slug });
  }
  return {
    key: input.key,
    fileName: input.fileName,
    kind,
    name,
    slug,
    sourceBytes: info.size,
    sheet: input.sheet,
    replacing,
    ...(slug !== derived ? { slugTaken: derived } : {}),
  };
}

/**
 * Converts the uploaded file into a dataset, inside `db` (the paid call's transaction): the schema
 * (load.ts: `firstPass`), a dataset Table in column storage, its records loaded with COPY
 * (`loadColumns`); a bad file fails with nothing kept. A replacement loads into a new table and
 * then, in the same transaction, points the dataset at it and gives it the slug (the old table is
 * dropped after commit): readers see the old data until commit and the new data after, never a mix.
 */
export async function convertDataFile(deps: Deps, site: SiteRow, plan: ConvertPlan, db: DbOrTx): Promise<ConvertResult> {
  const limits = parseLimits(deps);
  await fsp.mkdir(deps.config.datasets.tmpDir, { recursive: true });
  const open = blobOpener(deps.blobs, plan.key);
  const file = await asInvalidFile(plan, plan.kind, () =>
    prepareDataFile(open, plan.kind, { limits, sheet: plan.sheet, tmpRoot: deps.config.datasets.tmpDir }),
  );
  try {
    const first = await asInvalidFile(plan, file.kind, () => firstPass(file, open, limits));
    await sweepOrphanTables(deps, site.id, db);
    let table = await createLoadTable(deps, site, plan, first, db);
    const { count, schema } = await asInvalidFile(plan, file.kind, () => loadColumns(db, table.id, file, first, open, limits));
    // A CSV's schema was guessed from its first MiB; the whole file may have widened a column.
    if (!sameFields(schema, first.schema))
      table = onlyRow(
        await db
          .update(tables)
          .set({ schema: tableSchemaOf(schema) })
          .where(eq(tables.id, table.id))
          .returning(),
        'widen the dataset schema',
      );
    if (count !== schema.records) {
      const changed = new DataFileError(`the second read gave ${count} records, the first ${schema.records}; the file changed during conversion`);
      throw dataFileInvalid(plan.fileName, file.kind, changed);
    }
    const values: DatasetValues = {
      tableId: table.id,
      name: plan.name,
      format: file.kind,
      fileName: plan.fileName,
      sourceKey: plan.key,
      sourceBytes: plan.sourceBytes,
      recordCount: count,
      updatedAt: deps.clock.now(),
    };
    const { row, cleanup } = await recordDataset(deps, site, plan, table, values, db);
    return { view: toDatasetView(deps, site, row, schema.fields), cleanup };
  } finally {
    await file.close();
  }
}

/** Runs one step of reading the file; a DataFileError becomes the 400 that names the file and its format. */
async function asInvalidFile<T>(plan: ConvertPlan, kind: DataFileKind, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (e) {
    if (e instanceof DataFileError) throw dataFileInvalid(plan.fileName, kind, e);
    throw e;
  }
}

type TableRow = typeof tables.$inferSelect;
type DatasetValues = Omit<typeof datasets.$inferInsert, 'id' | 'siteId' | 'slug' | 'createdAt'> & { tableId: string; updatedAt: Date };

/** The column-storage Table the records load into: under the dataset's slug, or a temporary one when replacing. */
async function createLoadTable(deps: Deps, site: SiteRow, plan: ConvertPlan, first: FirstPass, db: DbOrTx): Promise<TableRow> {
  const loadSlug = plan.replacing ? `tmp-${randomBytes(8).toString('hex')}` : plan.slug;
  try {
    const { table } = await createTable(
      deps,
      site,
      { name: plan.name, slug: loadSlug, kind: 'dataset', storage: 'columns', schema: tableSchemaOf(first.schema) },
      db,
    );
    return table;
  } catch (e) {
    if (e instanceof AppError && e.code === 'slug_taken') {
      throw new AppError('slug_taken', `"${plan.slug}" was taken meanwhile; pass replaceExisting: true or choose another slug`, { slug: plan.slug });
    }
    throw e;
  }
}

/** The dataset row: a new one, or the replaced one pointed at the new table (see replaceDataset). */
async function recordDataset(
  deps: Deps,
  site: SiteRow,
  plan: ConvertPlan,
  table: TableRow,
  values: DatasetValues,
  db: DbOrTx,
): Promise<{ row: DatasetRow; cleanup: () => Promise<void> }> {
  try {
    if (plan.replacing) return await replaceDataset(deps, site, plan, plan.replacing, table, values, db);
    const row = onlyRow(
      await db
        .insert(datasets)
        .values({ id: newId('ds'), siteId: site.id, slug: plan.slug, createdAt: values.updatedAt, ...values })
        .returning(),
      'insert the dataset',
    );
    return { row, cleanup: async () => {} };
  } catch (e) {
    if (isUniqueViolation(e)) throw new AppError('slug_taken', `"${plan.slug}" was taken meanwhile; choose another slug`, { slug: plan.slug });
    throw e;
  }
}

/**
 * Points the dataset at the freshly loaded table and gives that table the slug. The old table steps
 * aside under a tombstone slug instead of being deleted here: a reader that resolved the slug to it
 * just before commit still finds its records. It is deleted right after commit (the returned
 * cleanup), and any tombstone a crash left behind by the next conversion.
 */
async function replaceDataset(
  deps: Deps,
  site: SiteRow,
  plan: ConvertPlan,
  replacing: DatasetRow,
  table: TableRow,
  values: DatasetValues,
  db: DbOrTx,
): Promise<{ row: DatasetRow; cleanup: () => Promise<void> }> {
  const oldTableId = replacing.tableId;
  const [row] = await db.update(datasets).set(values).where(eq(datasets.id, replacing.id)).returning();
  if (!row) throw new AppError('conflict', 'the dataset being replaced was deleted meanwhile; convert again');
  await db
    .update(tables)
    .set({ slug: `old-${randomBytes(8).toString('hex')}` })
    .where(and(eq(tables.id, oldTableId), eq(tables.siteId, site.id)));
  await promoteTable(deps, table, plan.slug, db);
  const cleanup = async () => {
    await deps.db.transaction(async (tx) => {
      const [old] = await tx
        .select()
        .from(tables)
        .where(and(eq(tables.id, oldTableId), eq(tables.kind, 'dataset')));
      if (old) await deleteTable(deps, old, tx);
    });
  };
  return { row, cleanup };
}

/** What the Account API answers for a dataset made. */
export interface DatasetMade {
  dataset: DatasetView;
  replaced: boolean;
  slugTaken?: string;
}

/**
 * `POST /api/v1/sites/:siteId/datasets`: a data file given inline becomes a dataset of the site.
 * The bytes go into an upload slot as an uploaded file would (`storeInlineUpload`), then the same
 * checks and conversion as convert_data_file_to_api, in one transaction; the replaced table (if
 * any) is dropped after commit.
 */
export async function createDatasetFromInline(deps: Deps, site: SiteRow, input: CreateDatasetBody): Promise<DatasetMade> {
  const bytes = input.encoding === 'base64' ? decodeBase64Field('content', input.content) : Buffer.from(input.content, 'utf8');
  const key = await storeInlineUpload(deps, site, { fileName: input.fileName, bytes });
  let converted: Converted;
  try {
    const { name, slug, replaceExisting, sheet } = input;
    converted = await convertUpload(deps, site, { key, fileName: input.fileName, name, slug, replaceExisting, sheet });
  } catch (e) {
    // Refused: the file is not kept either (an uploaded file stays its uploader's to convert again).
    await dropUpload(deps, site.id, key);
    throw e;
  }
  return made(converted);
}

/**
 * `POST /api/v1/sites/:siteId/datasets/convert`: a file uploaded through the account's upload URL
 * becomes a dataset, as convert_data_file_to_api does for a wallet's app (the same checks; a refused
 * file stays in its slot, to be converted again).
 */
export async function createDatasetFromUpload(deps: Deps, site: SiteRow, input: ConvertDatasetUploadBody): Promise<DatasetMade> {
  assertUploadToken(deps, input.uploadToken, site.id, input.key);
  return made(await convertUpload(deps, site, input));
}

interface Converted {
  plan: ConvertPlan;
  result: ConvertResult;
}

/** Plans and converts an uploaded file in one transaction (the replaced table is dropped by `made`, after commit). */
async function convertUpload(deps: Deps, site: SiteRow, input: ConvertInput): Promise<Converted> {
  const plan = await planConversion(deps, site, input);
  return { plan, result: await deps.db.transaction((tx) => convertDataFile(deps, site, plan, tx)) };
}

async function made({ plan, result }: Converted): Promise<DatasetMade> {
  await result.cleanup();
  return { dataset: result.view, replaced: plan.replacing !== null, ...(plan.slugTaken ? { slugTaken: plan.slugTaken } : {}) };
}

export interface ConvertResult {
  view: DatasetView;
  /** Run after the transaction committed: deletes the replaced table (see convertDataFile). */
  cleanup: () => Promise<void>;
}

/** Dataset tables no dataset points at (tombstones a crash left between commit and cleanup). */
async function sweepOrphanTables(deps: Deps, siteId: string, db: DbOrTx): Promise<void> {
  const orphans = await db
    .select()
    .from(tables)
    .where(
      and(
        eq(tables.siteId, siteId),
        eq(tables.kind, 'dataset'),
        like(tables.slug, 'old-%'),
        sql`not exists (select 1 from datasets d where d.table_id = ${tables.id})`,
      ),
    );
  for (const t of orphans) await deleteTable(deps, t, db);
}

export function toDatasetView(
  deps: Deps,
  site: Pick<SiteRow, 'slug'>,
  row: DatasetRow,
  fields: { name: string; label: string; type: FieldType }[],
): DatasetView {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    format: row.format,
    fileName: row.fileName,
    tableId: row.tableId,
    ...tableUrls(deps.config, site.slug, row.slug),
    recordCount: row.recordCount,
    fields: fields.map((f) => ({ name: f.name, label: f.label, type: f.type })),
    sourceBytes: row.sourceBytes,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

/** The site's datasets, oldest first, with their Table schema. */
export async function listDatasets(deps: Deps, site: Pick<SiteRow, 'id' | 'slug'>, db: DbOrTx = deps.db): Promise<DatasetView[]> {
  const rows = await db
    .select({ dataset: datasets, schema: tables.schema })
    .from(datasets)
    .innerJoin(tables, eq(tables.id, datasets.tableId))
    .where(eq(datasets.siteId, site.id))
    .orderBy(asc(datasets.createdAt), asc(datasets.id));
  return rows.map((r) => toDatasetView(deps, site, r.dataset, r.schema.fields));
}
