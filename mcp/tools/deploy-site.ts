import fs from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { z } from 'zod';
import { actionByName } from '../../shared/agent-api/catalogue.js';
import { contentTypeForPath } from '../../shared/content-types.js';
import { SITE_UPLOAD_MAX_FILES, VisibilitySchema } from '../../shared/agent-api/actions/common.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import { assertWithinCaps } from '../../wallet/ledger.js';
import { callAction, type PaymentInfo } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import { addTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';

// Media types guessed from the extension, as the service guesses them for uploaded files.
const typeOf = contentTypeForPath;
const MAX_FILES = 1000;
/** Upper bound of one deploy's bytes held in memory (files are read before the first payment). */
const MAX_TOTAL_BYTES = 256 * 1024 * 1024;
const UPLOAD_CONCURRENCY = 4;

interface DeployFile {
  path: string;
  bytes: Buffer;
  type: string;
}

const FileArg = z.object({
  path: z.string().min(1).max(512).describe('Relative path, e.g. "index.html" or "css/site.css"'),
  content: z.string().optional().describe('UTF-8 text content'),
  contentBase64: z.string().optional().describe('Binary content, base64 (instead of content)'),
  contentType: z.string().optional().describe('Media type; guessed from the extension when omitted'),
});

function cleanPath(p: string): string {
  const n = p.replace(/\\/g, '/').replace(/^\.\/+/, '');
  if (!n || n.startsWith('/') || n.split('/').some((s) => s === '..' || s === ''))
    throw new ToolFailure(`deploy_site: "${p}" is not a relative file path (no leading "/", no ".."). Nothing was paid.`);
  return n;
}

function readFolder(root: string, maxBytes: number): DeployFile[] {
  const abs = path.resolve(root);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(abs);
  } catch {
    throw new ToolFailure(`deploy_site: the folder ${abs} does not exist on the machine running the MCP server. Nothing was paid.`);
  }
  if (!stat.isDirectory()) throw new ToolFailure(`deploy_site: ${abs} is not a folder. Nothing was paid.`);
  const out: DeployFile[] = [];
  const walk = (dir: string) => {
    for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
      // Dotfiles (.git, .env) and node_modules are never published from a folder.
      if (ent.name.startsWith('.') || ent.name === 'node_modules') continue;
      const full = path.join(dir, ent.name);
      if (ent.isDirectory()) walk(full);
      else if (ent.isFile()) {
        const rel = path.relative(abs, full).split(path.sep).join('/');
        const size = fs.statSync(full).size;
        if (size > maxBytes)
          throw new ToolFailure(`deploy_site: ${rel} is ${size} bytes, over the ${maxBytes}-byte limit (SVC_MCP_MAX_FILE_BYTES). Nothing was paid.`);
        if (out.length >= MAX_FILES)
          throw new ToolFailure(`deploy_site: the folder has more than ${MAX_FILES} files. Nothing was paid; deploy a smaller folder.`);
        out.push({ path: rel, bytes: fs.readFileSync(full), type: typeOf(rel) });
      }
    }
  };
  walk(abs);
  return out;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

function progressReporter(extra: Extra, total: number) {
  const token = extra._meta?.progressToken;
  let done = 0;
  return async (message: string) => {
    done++;
    if (token === undefined) return;
    await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: done, total, message } }).catch(() => undefined);
  };
}

const action = (name: string): AgentAction => actionByName(name)!;

const DeployArgs = {
  appName: z.string().min(1).max(63).optional().describe('Name (slug) of a new app; see suggest_site_name. Omit with appId.'),
  appId: z.string().min(1).optional().describe('Existing app to update instead'),
  files: z.array(FileArg).max(MAX_FILES).optional().describe('Inline files'),
  folder: z.string().optional().describe('Absolute path of a local folder (dotfiles and node_modules skipped)'),
  entryPoint: z.string().optional().describe('File served for "/" (default index.html)'),
  visibility: VisibilitySchema.optional().describe('New app: public (default) or private'),
  password: z.string().min(1).max(200).optional().describe('New app: private behind this password'),
};
export type DeployInput = { [K in keyof typeof DeployArgs]?: z.infer<(typeof DeployArgs)[K]> };

/**
 * The paid steps a deploy makes and their total, from the same arguments deploy_site takes (the
 * folder is read, nothing is sent). Used by deploy_site before its first payment and by quote.
 */
export function deployPlan(ctx: McpContext, args: DeployInput) {
  if (!args.appName === !args.appId) throw new ToolFailure('deploy_site needs either appName (new app) or appId (existing app), not both. Nothing was paid.');
  if (!args.files === !args.folder) throw new ToolFailure('deploy_site needs either files (inline) or folder (local path). Nothing was paid.');
  const files: DeployFile[] = args.folder
    ? readFolder(args.folder, ctx.config.maxFileBytes)
    : args.files!.map((f) => {
        if ((f.content === undefined) === (f.contentBase64 === undefined))
          throw new ToolFailure(`deploy_site: ${f.path} needs content or contentBase64. Nothing was paid.`);
        const p = cleanPath(f.path);
        return {
          path: p,
          bytes: f.content !== undefined ? Buffer.from(f.content, 'utf8') : Buffer.from(f.contentBase64!, 'base64'),
          type: f.contentType ?? typeOf(p),
        };
      });
  if (files.length === 0) throw new ToolFailure('deploy_site: no files to deploy. Nothing was paid.');
  const totalBytes = files.reduce((n, f) => n + f.bytes.length, 0);
  if (totalBytes > MAX_TOTAL_BYTES)
    throw new ToolFailure(
      `deploy_site: ${totalBytes} bytes in total, over the ${MAX_TOTAL_BYTES}-byte limit of one deploy. Nothing was paid; deploy in parts (appId) or use create_site_upload_urls (toolset advanced).`,
    );
  if (new Set(files.map((f) => f.path)).size !== files.length) throw new ToolFailure('deploy_site: two files have the same path. Nothing was paid.');
  const entryPoint = cleanPath(args.entryPoint ?? 'index.html');
  const entry = files.find((f) => f.path === entryPoint);
  if (!entry) throw new ToolFailure(`deploy_site: the entry point ${entryPoint} is not among the files. Add it or set entryPoint. Nothing was paid.`);
  // Batches: every batch carries the entry point, so each finalize names a file it uploads.
  const others = files.filter((f) => f !== entry);
  const perBatch = SITE_UPLOAD_MAX_FILES - 1;
  const batches: DeployFile[][] = [];
  for (let i = 0; i === 0 || i < others.length; i += perBatch) batches.push([entry, ...others.slice(i, i + perBatch)]);
  const plan: AgentAction[] = [
    ...(args.appId ? [] : [action('x402.create_app_from_html')]),
    ...batches.flatMap(() => [action('x402.create_site_upload_urls'), action('x402.finalize_site_upload')]),
    action('x402.publish_app'),
  ];
  const planned = plan.reduce((s, a) => s + usdcToAtomic(priceOf(ctx, a.name)), 0n);
  return { files, entry, entryPoint, batches, plan, planned };
}

/**
 * deploy_site: inline files or a local folder → create the app (or update `appId`), upload every file
 * through upload URLs (batches of SITE_UPLOAD_MAX_FILES), finalize, publish; returns the live URL.
 * The whole plan is priced and checked against the caps before the first payment, so a deploy
 * does not stop half-way on a cap. Local wallet only: one tool call makes several payments.
 */
export function registerDeploySite(server: McpServer, ctx: McpContext): void {
  if (ctx.config.readOnly) return;
  const steps = ['x402.create_app_from_html', 'x402.create_site_upload_urls', 'x402.finalize_site_upload', 'x402.publish_app'];
  const newSite = () => atomicToUsdc(steps.reduce((sum, s) => sum + usdcToAtomic(priceOf(ctx, s)), 0n));
  addTool(
    server,
    ctx,
    'deploy_site',
    {
      description: () =>
        `Publish a static site from inline files or a local folder in one call: creates the app (or updates appId), uploads, publishes; returns url and pathUrl. A new app of up to 99 files costs ${newSite()} USDC (quote prices any plan). Sends progress.`,
      inputSchema: DeployArgs,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    },
    (async (args: DeployInput, extra: Extra): Promise<CallToolResult> =>
      guarded(async () => {
        const { files, entry, entryPoint, batches, plan, planned } = deployPlan(ctx, args);
        const fileList = files.map((f) => ({ path: f.path, size: f.bytes.length, type: f.type }));
        const totals = await ctx.wallet.ledger.totals();
        const caps = ctx.wallet.config.caps;
        // The whole deploy must fit the session/day/lifetime headroom; each step must fit the per-call cap.
        assertWithinCaps(planned, totals, { ...caps, perCall: planned }, 'deploy_site (all steps together)');
        for (const a of plan) assertWithinCaps(usdcToAtomic(priceOf(ctx, a.name)), { session: 0n, day: 0n, total: 0n }, caps, a.name);
        if (!ctx.wallet.address)
          throw new ToolFailure('deploy_site needs a wallet to pay; set SVC_WALLET_PRIVATE_KEY or SVC_WALLET_KEY_FILE. Nothing was paid.');

        const progress = progressReporter(extra, plan.length + files.length);
        const payments: (PaymentInfo & { action: string })[] = [];
        const paidSoFar = () => atomicToUsdc(payments.reduce((s, p) => s + usdcToAtomic(p.price), 0n));
        const step = async (a: AgentAction, params: Record<string, unknown>, body?: Record<string, unknown>) => {
          try {
            const r = await callAction(ctx, a, params, body);
            if (r.payment) payments.push({ action: a.name, ...r.payment });
            return r.body;
          } catch (e) {
            const msg = (e as Error).message;
            throw new ToolFailure(
              `deploy_site stopped at ${a.name.slice(5)}: ${msg} Paid so far in this deploy: ${paidSoFar()} USDC${appId ? ` (app ${appId}${appName ? `, ${appName}` : ''} exists; retry with appId to finish)` : ''}.`,
            );
          }
        };

        let appId = args.appId ?? null;
        let appName: string | null = null;
        let url: string | null = null;
        let pathUrl: string | null = null;
        if (!appId) {
          if (!entry.type.startsWith('text/html'))
            throw new ToolFailure(`deploy_site: a new app starts from an HTML entry point; ${entryPoint} is ${entry.type}. Nothing was paid.`);
          const body = await step(
            action('x402.create_app_from_html'),
            {},
            {
              name: args.appName,
              html: entry.bytes.toString('utf8'),
              ...(args.password ? { password: args.password } : {}),
              ...(args.visibility ? { visibility: args.visibility } : {}),
            },
          );
          const app = body.app as { appId: string; appName?: string; url?: string; pathUrl?: string };
          appId = app.appId;
          appName = app.appName ?? null;
          url = app.url ?? null;
          pathUrl = app.pathUrl ?? null;
          await progress(`created app ${appName ?? appId}`);
        }
        for (const batch of batches) {
          const urls = await step(
            action('x402.create_site_upload_urls'),
            { siteId: appId },
            { files: batch.map((f) => ({ path: f.path, size: f.bytes.length, type: f.type })) },
          );
          await progress(`got ${batch.length} upload URLs`);
          const token = urls.uploadToken as string;
          const targets = urls.files as { path: string; uploadUrl: string; headers?: Record<string, string>; method?: string }[];
          // PUT the files a few at a time; the first failure stops the deploy before finalize.
          let next = 0;
          let failed = false;
          const worker = async () => {
            while (next < batch.length && !failed) {
              const f = batch[next++]!;
              const t = targets.find((x) => x.path === f.path);
              if (!t)
                throw new ToolFailure(
                  `deploy_site: the service returned no upload URL for ${f.path}. Paid so far: ${paidSoFar()} USDC; retry with appId ${appId}.`,
                );
              const res = await ctx
                .fetch(t.uploadUrl, { method: t.method ?? 'PUT', headers: { 'content-type': f.type, ...(t.headers ?? {}) }, body: new Uint8Array(f.bytes) })
                .catch((e: Error) => {
                  failed = true;
                  throw new ToolFailure(`deploy_site: uploading ${f.path} failed (${e.message}). Paid so far: ${paidSoFar()} USDC; retry with appId ${appId}.`);
                });
              if (!res.ok) failed = true;
              if (!res.ok)
                throw new ToolFailure(
                  `deploy_site: uploading ${f.path} failed with HTTP ${res.status} (${(await res.text()).slice(0, 200)}). Paid so far: ${paidSoFar()} USDC; retry with appId ${appId}.`,
                );
              await res.arrayBuffer().catch(() => undefined);
              await progress(`uploaded ${f.path}`);
            }
          };
          await Promise.all(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, batch.length) }, worker));
          const fin = await step(
            action('x402.finalize_site_upload'),
            { siteId: appId },
            { uploadToken: token, entryPoint, files: batch.map((f) => ({ path: f.path, size: f.bytes.length })) },
          );
          const app = fin.app as { appName?: string; url?: string; pathUrl?: string } | undefined;
          appName = app?.appName ?? appName;
          url = app?.url ?? url;
          pathUrl = app?.pathUrl ?? pathUrl;
          await progress(`finalized ${batch.length} files`);
        }
        const pub = await step(action('x402.publish_app'), { siteId: appId });
        const app = pub.app as { appName?: string; url?: string; pathUrl?: string } | undefined;
        appName = app?.appName ?? appName;
        url = app?.url ?? url;
        pathUrl = app?.pathUrl ?? pathUrl;
        await progress('published');
        return okResult(
          {
            appId,
            appName,
            url,
            pathUrl,
            files: fileList.length,
            bytes: fileList.reduce((n, f) => n + f.size, 0),
            paid: paidSoFar(),
            receiptIds: payments.map((p) => p.receiptId),
          },
          `Deployed ${files.length} files; live at ${url} (also ${pathUrl}). Paid ${paidSoFar()} USDC.`,
        );
      })) as never,
  );
}
