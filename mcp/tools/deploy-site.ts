import fs from 'node:fs';
import path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { contentTypeForPath } from '../../shared/content-types.js';
import { SITE_UPLOAD_MAX_FILES, VisibilitySchema } from '../../shared/agent-api/actions/common.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import { priceOf, type McpContext } from '../context.js';
import { GET_A_WALLET } from '../../wallet/errors.js';
import { addTool } from '../register.js';
import { APP_ID_DESCRIPTION } from '../vocabulary.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { type Extra, PaidSteps, Progress, action, assertPlanFits, planTotal } from './paid-steps.js';

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

const DeployArgs = {
  appName: z.string().min(1).max(63).optional().describe('Name (slug) of a new app; omitted: a free one is picked. Omit with appId.'),
  appId: z.string().min(1).optional().describe(`${APP_ID_DESCRIPTION} of an existing app to update instead`),
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
  if (args.appName && args.appId) throw new ToolFailure('deploy_site takes appName (a new app) or appId (an existing app), not both. Nothing was paid.');
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
  const planned = planTotal(ctx, plan);
  return { files, entry, entryPoint, batches, plan, planned };
}

type DeployPlan = ReturnType<typeof deployPlan>;
type UploadTarget = { path: string; uploadUrl: string; headers?: Record<string, string>; method?: string };
type AppFields = { appId?: string; appName?: string; url?: string; pathUrl?: string };

/** One deploy_site call under way: the app it builds, the payments it made, the progress it sends. */
class DeployRun {
  appId: string | null;
  appName: string | null = null;
  url: string | null = null;
  pathUrl: string | null = null;
  readonly #ctx: McpContext;
  readonly #plan: DeployPlan;
  readonly #paid: PaidSteps;
  readonly #progress: Progress;
  #created = false;

  constructor(ctx: McpContext, plan: DeployPlan, appId: string | undefined, extra: Extra) {
    this.#ctx = ctx;
    this.#plan = plan;
    this.appId = appId ?? null;
    this.#paid = new PaidSteps(ctx);
    this.#progress = new Progress(extra, plan.plan.length + plan.files.length);
  }

  /** One paid action; a failure says what was paid so far and how to finish. */
  #step(name: string, params: Record<string, unknown>, body?: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.#paid.pay(name, params, body, (step, msg) => {
      // An app this deploy created outlives the failure: say so, so that the retry updates it instead of paying for another.
      const app = this.#created ? ` (app ${this.appId}${this.appName ? `, ${this.appName}` : ''} exists; retry with appId to finish)` : '';
      return new ToolFailure(`deploy_site stopped at ${step}: ${msg} Paid so far in this deploy: ${this.#paid.paidSoFar()} USDC${app}.`);
    });
  }

  /** Keeps the newest name and addresses the service returned for the app. */
  #adopt(app: AppFields | undefined): void {
    this.appId = app?.appId ?? this.appId;
    this.appName = app?.appName ?? this.appName;
    this.url = app?.url ?? this.url;
    this.pathUrl = app?.pathUrl ?? this.pathUrl;
  }

  async createApp(args: DeployInput): Promise<void> {
    const { entry, entryPoint } = this.#plan;
    if (!entry.type.startsWith('text/html'))
      throw new ToolFailure(`deploy_site: a new app starts from an HTML entry point; ${entryPoint} is ${entry.type}. Nothing was paid.`);
    // No name given: the service's free suggestion, as suggest_site_name would give it.
    const name = args.appName ?? ((await this.#step('x402.suggest_site_name', {})).name as string);
    const body = await this.#step(
      'x402.create_app_from_html',
      {},
      {
        name,
        html: entry.bytes.toString('utf8'),
        ...(args.password ? { password: args.password } : {}),
        ...(args.visibility ? { visibility: args.visibility } : {}),
      },
    );
    this.#adopt(body.app as AppFields);
    this.#created = true;
    await this.#progress.report(`created app ${this.appName ?? this.appId}`);
  }

  /** Upload URLs for one batch, the PUTs, then finalize. */
  async uploadBatch(batch: DeployFile[]): Promise<void> {
    const siteId = this.appId;
    const files = batch.map((f) => ({ path: f.path, size: f.bytes.length, type: f.type }));
    const urls = await this.#step('x402.create_site_upload_urls', { siteId }, { files });
    await this.#progress.report(`got ${batch.length} upload URLs`);
    await this.#putFiles(batch, urls.files as UploadTarget[]);
    const uploaded = batch.map((f) => ({ path: f.path, size: f.bytes.length }));
    const fin = await this.#step(
      'x402.finalize_site_upload',
      { siteId },
      { uploadToken: urls.uploadToken as string, entryPoint: this.#plan.entryPoint, files: uploaded },
    );
    this.#adopt(fin.app as AppFields | undefined);
    await this.#progress.report(`finalized ${batch.length} files`);
  }

  /** PUTs the files a few at a time; the first failure stops the deploy before finalize. */
  async #putFiles(batch: DeployFile[], targets: UploadTarget[]): Promise<void> {
    let next = 0;
    let failed = false;
    const worker = async () => {
      while (next < batch.length && !failed) {
        const f = batch[next++]!;
        try {
          await this.#putFile(
            f,
            targets.find((x) => x.path === f.path),
          );
        } catch (e) {
          failed = true;
          throw e;
        }
        await this.#progress.report(`uploaded ${f.path}`);
      }
    };
    await Promise.all(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, batch.length) }, worker));
  }

  async #putFile(f: DeployFile, target: UploadTarget | undefined): Promise<void> {
    const retry = `Paid so far: ${this.#paid.paidSoFar()} USDC; retry with appId ${this.appId}.`;
    if (!target) throw new ToolFailure(`deploy_site: the service returned no upload URL for ${f.path}. ${retry}`);
    const init = { method: target.method ?? 'PUT', headers: { 'content-type': f.type, ...(target.headers ?? {}) }, body: new Uint8Array(f.bytes) };
    const res = await this.#ctx.fetch(target.uploadUrl, init).catch((e: Error) => {
      throw new ToolFailure(`deploy_site: uploading ${f.path} failed (${e.message}). ${retry}`);
    });
    if (!res.ok) throw new ToolFailure(`deploy_site: uploading ${f.path} failed with HTTP ${res.status} (${(await res.text()).slice(0, 200)}). ${retry}`);
    await res.arrayBuffer().catch(() => undefined);
  }

  async publish(): Promise<void> {
    const pub = await this.#step('x402.publish_app', { siteId: this.appId });
    this.#adopt(pub.app as AppFields | undefined);
    await this.#progress.report('published');
  }

  result(): CallToolResult {
    const { files } = this.#plan;
    const paid = this.#paid.paidSoFar();
    return okResult(
      {
        appId: this.appId,
        appName: this.appName,
        url: this.url,
        pathUrl: this.pathUrl,
        files: files.length,
        bytes: files.reduce((n, f) => n + f.bytes.length, 0),
        paid,
        receiptIds: this.#paid.receiptIds(),
      },
      `Deployed ${files.length} files; live at ${this.url} (also ${this.pathUrl}). Paid ${paid} USDC.`,
    );
  }
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
        const plan = deployPlan(ctx, args);
        await assertPlanFits(ctx, 'deploy_site', plan.plan, plan.planned);
        if (!ctx.wallet.address) throw new ToolFailure(`deploy_site needs a wallet to pay; nothing was paid. ${GET_A_WALLET}`);
        const run = new DeployRun(ctx, plan, args.appId, extra);
        if (!run.appId) await run.createApp(args);
        for (const batch of plan.batches) await run.uploadBatch(batch);
        await run.publish();
        return run.result();
      })) as never,
  );
}
