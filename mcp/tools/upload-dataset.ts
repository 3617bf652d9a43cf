import fs from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { atomicToUsdc } from '../../shared/money.js';
import type { McpContext } from '../context.js';
import { addTool } from '../register.js';
import { tableAddress } from '../table-write-keys.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { approvePayment } from '../approval.js';
import { callAccountTool, composesForAccount, postToAccountApi } from './account-tools.js';
import { inlineContent, jsonSize, REQUEST_BUDGET } from './inline-content.js';
import { type Extra, PaidSteps, Progress, action, assertPlanFits, planTotal } from './paid-steps.js';
import { putBytes } from './upload-put.js';
import { continueAsTask, TaskCancelled } from '../tasks/extension.js';
import { APP_ID_DESCRIPTION, answerInToolWords } from '../vocabulary.js';

interface UploadUrlAnswer {
  strategy: 'single' | 'multipart';
  uploadToken: string;
  key: string;
  upload?: { url: string; method: 'PUT'; headers: Record<string, string> };
  uploadId?: string;
  parts?: { partNumber: number; url: string; size: number }[];
}

const DATASET_STEPS = ['x402.create_data_file_upload_url', 'x402.complete_data_file_multipart_upload', 'x402.convert_data_file_to_api'];

/** The most an upload costs (the multipart completion is paid only for large files); quote uses it too. */
export function datasetPlan(ctx: McpContext) {
  const plan = DATASET_STEPS.map(action);
  return { plan, planned: planTotal(ctx, plan) };
}

/** The bytes to upload: a local file (read a range at a time, so large files are never held whole) or inline text. */
function dataSource(args: { file?: string; content?: string; fileName?: string }): {
  size: number;
  fileName: string;
  readRange(start: number, length: number): Buffer;
} {
  if (!args.file === (args.content === undefined))
    throw new ToolFailure('upload_dataset needs either file (a local path) or content (inline text). Nothing was done.');
  let size: number;
  let fileName: string;
  if (args.file) {
    const abs = path.resolve(args.file);
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch {
      throw new ToolFailure(`upload_dataset: ${abs} does not exist on the machine running the MCP server. Nothing was done.`);
    }
    if (!st.isFile()) throw new ToolFailure(`upload_dataset: ${abs} is not a file. Nothing was done.`);
    size = st.size;
    fileName = args.fileName ?? path.basename(abs);
  } else {
    if (!args.fileName) throw new ToolFailure('upload_dataset: fileName (with its extension, e.g. "data.csv") is required with content. Nothing was done.');
    size = Buffer.byteLength(args.content!, 'utf8');
    fileName = args.fileName;
  }
  if (size === 0) throw new ToolFailure('upload_dataset: the file is empty. Nothing was done.');
  const readRange = (start: number, length: number): Buffer => {
    if (!args.file) return Buffer.from(args.content!, 'utf8').subarray(start, start + length);
    const fd = fs.openSync(path.resolve(args.file), 'r');
    try {
      const buf = Buffer.alloc(length);
      let off = 0;
      while (off < length) {
        const n = fs.readSync(fd, buf, off, length - off, start + off);
        if (n === 0) break;
        off += n;
      }
      return buf.subarray(0, off);
    } finally {
      fs.closeSync(fd);
    }
  };
  return { size, fileName, readRange };
}

const UploadArgs = {
  appId: z.string().min(1).describe(`${APP_ID_DESCRIPTION} that will own the dataset`),
  file: z.string().optional().describe('Absolute path of a local file'),
  content: z.string().optional().describe('Inline UTF-8 content (CSV, JSON, GeoJSON) instead of file'),
  fileName: z.string().min(1).max(255).optional().describe('File name with extension (required with content)'),
  fileType: z.string().max(200).optional().describe('Media type (the extension decides the format)'),
  name: z.string().min(1).max(200).optional().describe('Dataset display name'),
  slug: z.string().min(1).max(63).optional().describe('Table name in {base}/api/data/<appName>/<slug>'),
  replaceExisting: z.boolean().optional().describe('Replace the dataset with this slug (its old records go)'),
  sheet: z.string().min(1).max(200).optional().describe('XLSX: the sheet to read'),
};
type UploadInput = { [K in keyof typeof UploadArgs]: z.infer<(typeof UploadArgs)[K]> };
type DataSource = ReturnType<typeof dataSource>;

/** The three steps of an upload, as the service names them under the Account API (`datasets/<step>`). */
type UploadStep = 'upload-url' | 'complete-upload' | 'convert';

/**
 * Who makes an upload's steps: the wallet, paying the Agent API's actions, or the account of
 * SVC_API_KEY through the Account API, free. Both take the same bodies and answer the same shapes
 * (the conversion's dataset is `asset` on the Agent API, `dataset` on the Account API).
 */
interface UploadMaker {
  step(name: UploadStep, body: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Said after a failure past the first step: what it cost so far. */
  soFar(): string;
  /** Added to the answer, and the cost said in its summary. */
  done(): { extra: Record<string, unknown>; cost: string };
}

const AGENT_ACTION_OF: Record<UploadStep, string> = {
  'upload-url': 'x402.create_data_file_upload_url',
  'complete-upload': 'x402.complete_data_file_multipart_upload',
  convert: 'x402.convert_data_file_to_api',
};

/** The wallet pays each step (the plan was checked against the caps first). */
function paidMaker(ctx: McpContext, appId: string, approved: bigint | undefined): UploadMaker {
  const paid = new PaidSteps(ctx, 'upload_dataset', approved);
  const soFar = () => `Paid so far in this upload: ${paid.paidSoFar()} USDC.`;
  return {
    step: (name, body) =>
      paid.pay(AGENT_ACTION_OF[name], { siteId: appId }, body, (step, msg) => new ToolFailure(`upload_dataset stopped at ${step}: ${msg} ${soFar()}`)),
    soFar,
    done: () => ({ extra: { paid: paid.paidSoFar(), receiptIds: paid.receiptIds() }, cost: `Paid ${paid.paidSoFar()} USDC.` }),
  };
}

/** The account of SVC_API_KEY makes each step through the Account API, free. */
function accountMaker(ctx: McpContext, appId: string): UploadMaker {
  return {
    step: (name, body) =>
      postToAccountApi(ctx, `/sites/${encodeURIComponent(appId)}/datasets/${name}`, body).catch((e: unknown) => {
        throw e instanceof ToolFailure ? new ToolFailure(`upload_dataset stopped at ${name}: ${e.message}`) : e;
      }),
    soFar: () => '',
    done: () => ({ extra: { paid: '0' }, cost: 'Free.' }),
  };
}

/** One upload_dataset call under way by upload URL: its steps and progress. */
class DatasetUpload {
  readonly #ctx: McpContext;
  readonly #args: UploadInput;
  readonly #source: DataSource;
  readonly #maker: UploadMaker;
  readonly #progress: Progress;

  constructor(ctx: McpContext, args: UploadInput, source: DataSource, maker: UploadMaker, extra: Extra) {
    this.#ctx = ctx;
    this.#args = args;
    this.#source = source;
    this.#maker = maker;
    this.#progress = new Progress(extra, 3);
  }

  /** The whole upload: URL, the bytes (one PUT or every part, then the completion), the conversion. */
  async run(): Promise<CallToolResult> {
    // Asked and checked: the rest may run as a task (mcp/tasks/extension.ts).
    await continueAsTask(`uploading ${this.#source.fileName} (${this.#source.size.toLocaleString('en')} bytes) and converting it`);
    try {
      const up = await this.#uploadUrl();
      if (up.strategy === 'single') await this.#uploadSingle(up);
      else await this.#uploadParts(up);
      return await this.#convert(up);
    } catch (e) {
      // A cancelled task says what it cost so far, as any other stop does.
      throw e instanceof TaskCancelled ? new ToolFailure(this.#stopped(e.message)) : e;
    }
  }

  async #uploadUrl(): Promise<UploadUrlAnswer> {
    const { fileName, size } = this.#source;
    const fileType = this.#args.fileType;
    const up = (await this.#maker.step('upload-url', { fileName, fileSize: size, ...(fileType ? { fileType } : {}) })) as unknown as UploadUrlAnswer;
    await this.#progress.report(`upload URL (${up.strategy})`);
    return up;
  }

  /** A failure past the first step, with what it cost so far (where it cost anything) and what next. */
  #stopped(...sentences: string[]): string {
    return [sentences[0], this.#maker.soFar(), ...sentences.slice(1)].filter(Boolean).join(' ');
  }

  async #put(url: string, body: Buffer, headers: Record<string, string>, what: string): Promise<Response> {
    return putBytes(this.#ctx, url, { headers, body: new Uint8Array(body) }, (reason) =>
      this.#stopped(`upload_dataset: uploading ${what} failed ${reason}.`, 'Start again (the upload URL is single-use per part).'),
    );
  }

  async #uploadSingle(up: UploadUrlAnswer): Promise<void> {
    const { readRange, size, fileName } = this.#source;
    await this.#put(up.upload!.url, readRange(0, size), up.upload!.headers ?? {}, fileName);
    await this.#progress.report('uploaded');
  }

  /** Every part read from disk in turn and PUT, then the completion with their ETags. */
  async #uploadParts(up: UploadUrlAnswer): Promise<void> {
    const parts = up.parts ?? [];
    this.#progress.total = 3 + parts.length;
    const etags: { ETag: string; PartNumber: number }[] = [];
    let offset = 0;
    for (const p of parts) {
      const res = await this.#put(p.url, this.#source.readRange(offset, p.size), {}, `part ${p.partNumber}`);
      offset += p.size;
      const etag = res.headers.get('etag');
      if (!etag) throw new ToolFailure(this.#stopped(`upload_dataset: part ${p.partNumber} answered without an ETag.`));
      etags.push({ ETag: etag, PartNumber: p.partNumber });
      await this.#progress.report(`uploaded part ${p.partNumber}/${parts.length}`);
    }
    await this.#maker.step('complete-upload', { uploadId: up.uploadId, key: up.key, parts: etags, uploadToken: up.uploadToken });
    await this.#progress.report('multipart upload completed');
  }

  async #convert(up: UploadUrlAnswer): Promise<CallToolResult> {
    const { name, slug, replaceExisting, sheet } = this.#args;
    const conv = await this.#maker.step('convert', {
      key: up.key,
      fileName: this.#source.fileName,
      uploadToken: up.uploadToken,
      ...(name ? { name } : {}),
      ...(slug ? { slug } : {}),
      ...(replaceExisting !== undefined ? { replaceExisting } : {}),
      ...(sheet ? { sheet } : {}),
    });
    await this.#progress.report('converted');
    // The Agent API answers the dataset as `asset`, the Account API as `dataset`: one `dataset` in the tools' words.
    const { dataset } = answerInToolWords(conv.asset !== undefined ? { asset: conv.asset } : { dataset: conv.dataset }) as {
      dataset: { url?: string; pathUrl?: string } & Record<string, unknown>;
    };
    const taken = typeof conv.slugTaken === 'string' ? conv.slugTaken : undefined;
    const { extra, cost } = this.#maker.done();
    return datasetReady(dataset, taken, { strategy: up.strategy, ...extra }, cost);
  }
}

/**
 * upload_dataset for the account (svc-mcp with SVC_API_KEY and no wallet), free: a file that fits in
 * one Account API request goes inline (`account_create_dataset`); a larger one by the account's
 * upload URL, as the wallet's does, then the conversion (`datasets/upload-url`, `…/convert`).
 */
async function uploadForAccount(ctx: McpContext, args: UploadInput, extra: Extra): Promise<CallToolResult> {
  const source = dataSource(args);
  // A file larger than the budget is not read whole; base64 grows a binary one by a third.
  const inline = source.size <= REQUEST_BUDGET ? inlineContent(source.readRange(0, source.size)) : undefined;
  if (!inline || jsonSize(inline) > REQUEST_BUDGET) return new DatasetUpload(ctx, args, source, accountMaker(ctx, args.appId), extra).run();
  await continueAsTask(`converting ${source.fileName} (${source.size.toLocaleString('en')} bytes)`);
  const { name, slug, replaceExisting, sheet } = args;
  const answer = await callAccountTool(ctx, 'account_create_dataset', {
    appId: args.appId,
    fileName: source.fileName,
    ...inline,
    ...(name ? { name } : {}),
    ...(slug ? { slug } : {}),
    ...(replaceExisting !== undefined ? { replaceExisting } : {}),
    ...(sheet ? { sheet } : {}),
  }).catch((e: unknown) => {
    throw e instanceof ToolFailure ? new ToolFailure(`upload_dataset stopped: ${e.message} Nothing was kept.`) : e;
  });
  const dataset = answer.dataset as { url?: string; pathUrl?: string } & Record<string, unknown>;
  return datasetReady(dataset, typeof answer.slugTaken === 'string' ? answer.slugTaken : undefined, { strategy: 'inline', paid: '0' }, 'Free.');
}

/** The answer of a dataset made: where table_query reads it, and what a taken slug meant. */
function datasetReady(
  dataset: { url?: string; pathUrl?: string } & Record<string, unknown>,
  taken: string | undefined,
  extra: Record<string, unknown>,
  cost: string,
): CallToolResult {
  const { appName, table } = tableAddress(dataset?.pathUrl ?? '') ?? {};
  // A second upload of the same file is a new dataset beside the first: say so, and how to replace instead.
  const beside = taken ? ` ${taken} existed, so this is a new dataset beside it (replaceExisting: true with slug ${taken} replaces its data instead).` : '';
  return okResult(
    { appName, table, dataset, ...(taken ? { slugTaken: taken } : {}), ...extra },
    `Dataset ready at ${dataset?.url}; table_query reads it (appName ${appName}, table ${table}).${beside} ${cost}`,
  );
}

/**
 * upload_dataset: a local data file (or inline text) → upload URL → PUT (single, or every part of a
 * multipart upload, reading each part from disk) → complete → convert → the Table API URL. The plan
 * is priced and checked against the caps before the first payment.
 */
export function registerUploadDataset(server: McpServer, ctx: McpContext): void {
  if (ctx.config.readOnly) return;
  if (composesForAccount(ctx)) {
    addTool(
      server,
      ctx,
      'upload_dataset',
      {
        description:
          'Turn a data file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet) into a queryable Table API on an app of the account (SVC_API_KEY), free: uploads (in parts when large), converts, returns the Table API url, pathUrl and inferred fields. From a local file or inline content. Sends progress.',
        inputSchema: UploadArgs,
      },
      ((args: UploadInput, extra: Extra): Promise<CallToolResult> => guarded(() => uploadForAccount(ctx, args, extra))) as never,
      'account',
    );
    return;
  }
  addTool(
    server,
    ctx,
    'upload_dataset',
    {
      description: () =>
        `Turn a data file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet) into a queryable Table API on an app: uploads (multipart when large), converts, returns the Table API url, pathUrl and inferred fields. From a local file or inline content. Costs at most ${atomicToUsdc(datasetPlan(ctx).planned)} USDC. Sends progress.`,
      inputSchema: UploadArgs,
    },
    (async (args: UploadInput, extra: Extra): Promise<CallToolResult> =>
      guarded(async () => {
        const source = dataSource(args);
        // Worst case (multipart) is priced up front; single uploads skip the completion step.
        const { plan, planned } = datasetPlan(ctx);
        await assertPlanFits(ctx, 'upload_dataset', plan, planned);
        // Asked once for the whole quoted total (the worst case), before the first payment.
        const what = `uploads a data file to app ${JSON.stringify(args.appId)} and converts it into a Table API (at most ${plan.length} payments)`;
        const approval = await approvePayment(ctx, extra, { tool: 'upload_dataset', args, what, amount: planned });
        if (approval.kind === 'ask') return approval.result as never;
        return new DatasetUpload(ctx, args, source, paidMaker(ctx, args.appId, approval.approved), extra).run();
      })) as never,
  );
}
