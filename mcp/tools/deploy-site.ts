import type { McpServer } from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { SITE_UPLOAD_MAX_FILES } from '../../shared/agent-api/actions/common.js';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import { priceOf, type McpContext } from '../context.js';
import { GET_A_WALLET } from '../../wallet/errors.js';
import { addTool } from '../register.js';
import { ToolFailure, guarded, okResult } from '../results.js';
import { approvePayment } from '../approval.js';
import { composesForAccount } from './account-tools.js';
import { deployForAccount } from './deploy-for-account.js';
import { AccountDeployArgs, DeployArgs, type DeployFile, type DeployInput, deployFiles } from './deploy-files.js';
import { type Extra, PaidSteps, Progress, action, assertPlanFits, planTotal } from './paid-steps.js';
import { putBytes, putInTurns } from './upload-put.js';
import { continueAsTask, TaskCancelled } from '../tasks/extension.js';

/**
 * The paid steps a deploy makes and their total, from the same arguments deploy_site takes (the
 * folder is read, nothing is sent). Used by deploy_site before its first payment and by quote.
 */
export function deployPlan(ctx: McpContext, args: DeployInput) {
  const { files, entry, entryPoint } = deployFiles(ctx, args);
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

  constructor(ctx: McpContext, plan: DeployPlan, appId: string | undefined, extra: Extra, approved: bigint | undefined) {
    this.#ctx = ctx;
    this.#plan = plan;
    this.appId = appId ?? null;
    this.#paid = new PaidSteps(ctx, 'deploy_site', approved);
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
      throw new ToolFailure(`deploy_site: a new app starts from an HTML entry point; ${entryPoint} is ${entry.type}. Nothing was done.`);
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
    await putInTurns(batch, async (f) => {
      await this.#putFile(
        f,
        targets.find((x) => x.path === f.path),
      );
      await this.#progress.report(`uploaded ${f.path}`);
    });
  }

  async #putFile(f: DeployFile, target: UploadTarget | undefined): Promise<void> {
    const retry = `Paid so far: ${this.#paid.paidSoFar()} USDC; retry with appId ${this.appId}.`;
    if (!target) throw new ToolFailure(`deploy_site: the service returned no upload URL for ${f.path}. ${retry}`);
    const init = { method: target.method, headers: { 'content-type': f.type, ...(target.headers ?? {}) }, body: new Uint8Array(f.bytes) };
    const res = await putBytes(this.#ctx, target.uploadUrl, init, (reason) => `deploy_site: uploading ${f.path} failed ${reason}. ${retry}`);
    await res.arrayBuffer().catch(() => undefined);
  }

  async publish(): Promise<void> {
    const pub = await this.#step('x402.publish_app', { siteId: this.appId });
    this.#adopt(pub.app as AppFields | undefined);
    await this.#progress.report('published');
  }

  /** The task's cancellation, with what this deploy paid and left behind. */
  cancelled(e: TaskCancelled): ToolFailure {
    const app = this.#created ? ` App ${this.appId}${this.appName ? ` (${this.appName})` : ''} exists; deploy_site with appId finishes it.` : '';
    return new ToolFailure(`${e.message} Paid in this deploy: ${this.#paid.paidSoFar()} USDC.${app}`);
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
      `Deployed ${files.length} file${files.length === 1 ? '' : 's'}; live at ${this.pathUrl} (also ${this.url}). Paid ${paid} USDC.`,
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
  if (composesForAccount(ctx)) {
    addTool(
      server,
      ctx,
      'deploy_site',
      {
        description:
          'Publish a static site from inline files or a local folder in one call, for the account (SVC_API_KEY), free: a new app (or appId: its files replaced or added, the others kept); returns url and pathUrl. Sends progress.',
        inputSchema: AccountDeployArgs,
      },
      (async (args: DeployInput, extra: Extra): Promise<CallToolResult> => guarded(() => deployForAccount(ctx, args, deployFiles(ctx, args), extra))) as never,
      'account',
    );
    return;
  }
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
    },
    (async (args: DeployInput, extra: Extra): Promise<CallToolResult> =>
      guarded(async () => {
        const plan = deployPlan(ctx, args);
        await assertPlanFits(ctx, 'deploy_site', plan.plan, plan.planned);
        if (!ctx.wallet.address) throw new ToolFailure(`deploy_site needs a wallet to pay; nothing was paid. ${GET_A_WALLET}`);
        // Asked once for the whole quoted total, before the first payment.
        const what = `${args.appId ? `updates app ${JSON.stringify(args.appId)}` : `creates an app${args.appName ? ` ${JSON.stringify(args.appName)}` : ''}`} with ${plan.files.length} file${plan.files.length === 1 ? '' : 's'} and publishes it (${plan.plan.length} payments)`;
        const approval = await approvePayment(ctx, extra, { tool: 'deploy_site', args, what, amount: plan.planned });
        if (approval.kind === 'ask') return approval.result as never;
        const run = new DeployRun(ctx, plan, args.appId, extra, approval.approved);
        // Asked and checked: the rest may run as a task (mcp/tasks/extension.ts).
        await continueAsTask(`deploying ${plan.files.length} file${plan.files.length === 1 ? '' : 's'} (${plan.plan.length} payments)`);
        try {
          if (!run.appId) await run.createApp(args);
          for (const batch of plan.batches) await run.uploadBatch(batch);
          await run.publish();
        } catch (e) {
          throw e instanceof TaskCancelled ? run.cancelled(e) : e;
        }
        return run.result();
      })) as never,
  );
}
