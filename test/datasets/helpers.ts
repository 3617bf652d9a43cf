import { randomBytes } from 'node:crypto';
import type { AgentHandler } from '../../service/agent/handler.js';
import { datasetAgentHandlers } from '../../service/datasets/agent-handlers.js';
import { walletOwner } from '../../service/db/owner.js';
import { createSite } from '../../service/sites/sites.js';
import type { Harness } from '../helpers/harness.js';

export const newWallet = () => `0x${randomBytes(20).toString('hex')}`;

/**
 * Runs an Agent API handler the way the paid-call machinery does (service/agent/handler.ts):
 * `check` first (free), then `run` inside a transaction that commits only if `run` succeeds.
 */
export async function agentCall<O>(
  h: Harness,
  handler: AgentHandler<{ siteId: string }, never, O, never>,
  wallet: string,
  siteId: string,
  input: unknown,
): Promise<O> {
  const call = { deps: h.deps, wallet, params: { siteId }, input: input as never };
  const state = handler.check ? await handler.check(call) : (undefined as never);
  const work = await h.deps.db.transaction((tx) => handler.run({ ...call, tx, state }));
  await work.afterCommit?.();
  return work.result;
}

export const handlers = {
  upload: datasetAgentHandlers['x402.create_data_file_upload_url'] as unknown as AgentHandler<{ siteId: string }, never, UploadAnswer, never>,
  complete: datasetAgentHandlers['x402.complete_data_file_multipart_upload'] as unknown as AgentHandler<
    { siteId: string },
    never,
    { ok: true; success: boolean; key: string; size: number },
    never
  >,
  convert: datasetAgentHandlers['x402.convert_data_file_to_api'] as unknown as AgentHandler<{ siteId: string }, never, ConvertAnswer, never>,
};

export interface UploadAnswer {
  ok: true;
  strategy: 'single' | 'multipart';
  uploadToken: string;
  key: string;
  kind: string;
  upload?: { url: string; method: 'PUT'; headers: Record<string, string> };
  uploadId?: string;
  partSize?: number;
  parts?: { partNumber: number; url: string; size: number }[];
}

export interface ConvertAnswer {
  ok: true;
  replaced: boolean;
  asset: {
    id: string;
    slug: string;
    tableId: string;
    url: string;
    pathUrl: string;
    recordCount: number;
    format: string;
    fields: { name: string; type: string }[];
  };
}

/** An app owned by `wallet`, as create_app_from_html makes it. */
export async function walletApp(h: Harness, wallet: string, slug = `app-${randomBytes(4).toString('hex')}`) {
  return createSite(h.deps, walletOwner(wallet), { slug, html: '<h1>data</h1>', status: 'created' });
}

/** Sends the bytes the way a client would: one PUT, or every part PUT and completed with its ETag. */
export async function putFile(h: Harness, wallet: string, siteId: string, answer: UploadAnswer, bytes: Buffer): Promise<void> {
  if (answer.strategy === 'single') {
    const res = await fetch(answer.upload!.url, { method: 'PUT', headers: answer.upload!.headers, body: new Uint8Array(bytes) });
    if (!res.ok) throw new Error(`PUT failed: ${res.status} ${await res.text()}`);
    return;
  }
  const parts: { ETag: string; PartNumber: number }[] = [];
  let offset = 0;
  for (const p of answer.parts!) {
    const res = await fetch(p.url, { method: 'PUT', body: new Uint8Array(bytes.subarray(offset, offset + p.size)) });
    offset += p.size;
    if (!res.ok) throw new Error(`part ${p.partNumber} PUT failed: ${res.status} ${await res.text()}`);
    parts.push({ ETag: res.headers.get('etag')!, PartNumber: p.partNumber });
  }
  const done = await agentCall(h, handlers.complete, wallet, siteId, { uploadId: answer.uploadId, key: answer.key, parts, uploadToken: answer.uploadToken });
  if (!done.success || done.size !== bytes.length) throw new Error('multipart completion failed');
}

/** Upload + convert in one go (what an agent does); returns the convert answer. */
export async function uploadAndConvert(
  h: Harness,
  wallet: string,
  siteId: string,
  fileName: string,
  bytes: Buffer,
  extra: Record<string, unknown> = {},
): Promise<ConvertAnswer> {
  const answer = await agentCall(h, handlers.upload, wallet, siteId, { fileName, fileSize: bytes.length });
  await putFile(h, wallet, siteId, answer, bytes);
  return agentCall(h, handlers.convert, wallet, siteId, { key: answer.key, fileName, ...extra });
}

/** Expects the promise to reject with an AppError of `code`; returns it. */
export async function rejects(p: Promise<unknown>, code: string): Promise<{ code: string; message: string; details?: Record<string, unknown> }> {
  try {
    await p;
  } catch (e) {
    const err = e as { code?: string; message: string; details?: Record<string, unknown> };
    if (err.code !== code) throw new Error(`expected ${code}, got ${err.code ?? 'a non-AppError'}: ${err.message}`);
    return err as { code: string; message: string; details?: Record<string, unknown> };
  }
  throw new Error(`expected ${code}, but it succeeded`);
}
