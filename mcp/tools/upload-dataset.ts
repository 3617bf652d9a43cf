import fs from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { actionByName } from '../../shared/agent-api/catalogue.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import { assertWithinCaps } from '../../wallet/ledger.js';
import { callAction, type PaymentInfo } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import { addTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;
const action = (name: string): AgentAction => actionByName(name)!;

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
  return { plan, planned: plan.reduce((s, a) => s + usdcToAtomic(priceOf(ctx, a.name)), 0n) };
}

/** The bytes to upload: a local file (read a range at a time, so large files are never held whole) or inline text. */
function dataSource(args: { file?: string; content?: string; fileName?: string }): {
  size: number;
  fileName: string;
  readRange(start: number, length: number): Buffer;
} {
  if (!args.file === (args.content === undefined))
    throw new ToolFailure('upload_dataset needs either file (a local path) or content (inline text). Nothing was paid.');
  let size: number;
  let fileName: string;
  if (args.file) {
    const abs = path.resolve(args.file);
    let st: fs.Stats;
    try {
      st = fs.statSync(abs);
    } catch {
      throw new ToolFailure(`upload_dataset: ${abs} does not exist on the machine running the MCP server. Nothing was paid.`);
    }
    if (!st.isFile()) throw new ToolFailure(`upload_dataset: ${abs} is not a file. Nothing was paid.`);
    size = st.size;
    fileName = args.fileName ?? path.basename(abs);
  } else {
    if (!args.fileName) throw new ToolFailure('upload_dataset: fileName (with its extension, e.g. "data.csv") is required with content. Nothing was paid.');
    size = Buffer.byteLength(args.content!, 'utf8');
    fileName = args.fileName;
  }
  if (size === 0) throw new ToolFailure('upload_dataset: the file is empty. Nothing was paid.');
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

/**
 * upload_dataset: a local data file (or inline text) → upload URL → PUT (single, or every part of a
 * multipart upload, reading each part from disk) → complete → convert → the Table API URL. The plan
 * is priced and checked against the caps before the first payment.
 */
export function registerUploadDataset(server: McpServer, ctx: McpContext): void {
  if (ctx.config.readOnly) return;
  addTool(
    server,
    ctx,
    'upload_dataset',
    {
      description: () =>
        `Turn a data file (CSV, XLSX, JSON, GeoJSON, Shapefile ZIP, Parquet) into a queryable Table API on an app: uploads (multipart when large), converts, returns the Table API url, pathUrl and inferred fields. From a local file or inline content. Costs at most ${atomicToUsdc(datasetPlan(ctx).planned)} USDC. Sends progress.`,
      inputSchema: {
        appId: z.string().min(1).describe('App that will own the dataset'),
        file: z.string().optional().describe('Absolute path of a local file'),
        content: z.string().optional().describe('Inline UTF-8 content (CSV, JSON, GeoJSON) instead of file'),
        fileName: z.string().min(1).max(255).optional().describe('File name with extension (required with content)'),
        fileType: z.string().max(200).optional().describe('Media type (the extension decides the format)'),
        name: z.string().min(1).max(200).optional().describe('Dataset display name'),
        slug: z.string().min(1).max(63).optional().describe('Table name in {base}/api/data/<appName>/<slug>'),
        replaceExisting: z.boolean().optional().describe('Replace the dataset with this slug (its old records go)'),
        sheet: z.string().min(1).max(200).optional().describe('XLSX: the sheet to read'),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    (async (
      args: {
        appId: string;
        file?: string;
        content?: string;
        fileName?: string;
        fileType?: string;
        name?: string;
        slug?: string;
        replaceExisting?: boolean;
        sheet?: string;
      },
      extra: Extra,
    ): Promise<CallToolResult> =>
      guarded(async () => {
        const { size, fileName, readRange } = dataSource(args);

        // Worst case (multipart) is priced up front; single uploads skip the completion step.
        const { plan, planned } = datasetPlan(ctx);
        const caps = ctx.wallet.config.caps;
        assertWithinCaps(planned, await ctx.wallet.ledger.totals(), { ...caps, perCall: planned }, 'upload_dataset (all steps together)');
        for (const a of plan) assertWithinCaps(usdcToAtomic(priceOf(ctx, a.name)), { session: 0n, day: 0n, total: 0n }, caps, a.name);

        const payments: (PaymentInfo & { action: string })[] = [];
        const paidSoFar = () => atomicToUsdc(payments.reduce((s, p) => s + usdcToAtomic(p.price), 0n));
        const step = async (a: AgentAction, body: Record<string, unknown>) => {
          try {
            const r = await callAction(ctx, a, { siteId: args.appId }, body);
            if (r.payment) payments.push({ action: a.name, ...r.payment });
            return r.body;
          } catch (e) {
            throw new ToolFailure(`upload_dataset stopped at ${a.name.slice(5)}: ${(e as Error).message} Paid so far in this upload: ${paidSoFar()} USDC.`);
          }
        };
        const token = extra._meta?.progressToken;
        let done = 0;
        let total = 3;
        const progress = async (message: string) => {
          done++;
          if (token !== undefined)
            await extra
              .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done, total, message } })
              .catch(() => undefined);
        };

        const up = (await step(action('x402.create_data_file_upload_url'), {
          fileName,
          fileSize: size,
          ...(args.fileType ? { fileType: args.fileType } : {}),
        })) as unknown as UploadUrlAnswer;
        await progress(`upload URL (${up.strategy})`);
        const put = async (url: string, body: Buffer, headers: Record<string, string>, what: string) => {
          const res = await ctx.fetch(url, { method: 'PUT', headers, body: new Uint8Array(body) });
          if (!res.ok)
            throw new ToolFailure(
              `upload_dataset: uploading ${what} failed with HTTP ${res.status} (${(await res.text()).slice(0, 200)}). Paid so far: ${paidSoFar()} USDC; start again (the upload URL is single-use per part).`,
            );
          return res;
        };
        if (up.strategy === 'single') {
          await put(up.upload!.url, readRange(0, size), up.upload!.headers ?? {}, fileName);
          await progress('uploaded');
        } else {
          const parts = up.parts ?? [];
          total = 3 + parts.length;
          const etags: { ETag: string; PartNumber: number }[] = [];
          let offset = 0;
          for (const p of parts) {
            const res = await put(p.url, readRange(offset, p.size), {}, `part ${p.partNumber}`);
            offset += p.size;
            const etag = res.headers.get('etag');
            if (!etag) throw new ToolFailure(`upload_dataset: part ${p.partNumber} answered without an ETag. Paid so far: ${paidSoFar()} USDC.`);
            etags.push({ ETag: etag, PartNumber: p.partNumber });
            await progress(`uploaded part ${p.partNumber}/${parts.length}`);
          }
          await step(action('x402.complete_data_file_multipart_upload'), { uploadId: up.uploadId, key: up.key, parts: etags, uploadToken: up.uploadToken });
          await progress('multipart upload completed');
        }
        const conv = await step(action('x402.convert_data_file_to_api'), {
          key: up.key,
          fileName,
          uploadToken: up.uploadToken,
          ...(args.name ? { name: args.name } : {}),
          ...(args.slug ? { slug: args.slug } : {}),
          ...(args.replaceExisting !== undefined ? { replaceExisting: args.replaceExisting } : {}),
          ...(args.sheet ? { sheet: args.sheet } : {}),
        });
        await progress('converted');
        const asset = conv.asset as { url?: string } & Record<string, unknown>;
        return okResult(
          { strategy: up.strategy, asset, paid: paidSoFar(), receiptIds: payments.map((p) => p.receiptId) },
          `Dataset ready at ${asset?.url}. Paid ${paidSoFar()} USDC.`,
        );
      })) as never,
  );
}
