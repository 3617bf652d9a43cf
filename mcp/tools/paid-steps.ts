import type { ServerContext } from '@modelcontextprotocol/server';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { actionByName } from '../../shared/agent-api/catalogue.js';
import { atomicToUsdc, usdcToAtomic } from '../../shared/money.js';
import { assertWithinCaps, type SpendTotals } from '../../wallet/ledger.js';
import { callAction, NOTHING_PAID, type PaymentInfo } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import { currentTask } from '../tasks/extension.js';

/**
 * What the tools that make several payments in one call (deploy_site, upload_dataset) share: the plan
 * checked against the caps before the first payment, the payments made so far, progress notifications.
 */

/** A tool handler's request context (the SDK's): its `_meta` (progress token, payment) and notifications. */
export type Extra = ServerContext;

export const action = (name: string): AgentAction => actionByName(name)!;

/** The price of every step of a plan, added up in atomic units. */
export const planTotal = (ctx: McpContext, plan: AgentAction[]): bigint => plan.reduce((s, a) => s + usdcToAtomic(priceOf(ctx, a.name)), 0n);

/** The whole plan must fit the session/day/lifetime headroom, each step the per-call cap; checked before the first payment. */
export async function assertPlanFits(ctx: McpContext, tool: string, plan: AgentAction[], planned: bigint): Promise<void> {
  assertPlanWithinCaps(ctx, tool, plan, planned, await ctx.wallet.ledger.totals());
}

/** assertPlanFits against spending totals already read (quote uses it too). */
export function assertPlanWithinCaps(ctx: McpContext, tool: string, plan: AgentAction[], planned: bigint, totals: SpendTotals): void {
  const caps = ctx.wallet.config.caps;
  // The tool's own cap takes the whole plan; the hour's calls one per paid step.
  const calls = plan.filter((a) => usdcToAtomic(priceOf(ctx, a.name)) > 0n).length;
  assertWithinCaps(planned, totals, { ...caps, perCall: planned }, `${tool} (all steps together)`, { tool, calls });
  for (const a of plan) assertWithinCaps(usdcToAtomic(priceOf(ctx, a.name)), { session: 0n, day: 0n, total: 0n }, caps, a.name);
}

/**
 * Progress: notifications, sent when the client asked for them (a progressToken); or, once the call
 * became a task (mcp/tasks/extension.ts), the task's status message, where a cancellation stops the
 * work before its next step. `total` may grow once the work is known.
 */
export class Progress {
  total: number;
  #done = 0;
  readonly #extra: Extra;

  constructor(extra: Extra, total: number) {
    this.#extra = extra;
    this.total = total;
  }

  async report(message: string): Promise<void> {
    this.#done++;
    const task = currentTask();
    if (task) return task.progress(`${this.#done} of ${this.total}: ${message}`);
    const progressToken = this.#extra.mcpReq._meta?.progressToken;
    if (progressToken === undefined) return;
    await this.#extra.mcpReq
      .notify({ method: 'notifications/progress', params: { progressToken, progress: this.#done, total: this.total, message } })
      .catch(() => undefined);
  }
}

/** The payments one tool call has made; `pay` makes the next and, when it fails, lets the tool say what was paid so far. */
export class PaidSteps {
  readonly #ctx: McpContext;
  /** The composite tool (deploy_site, upload_dataset): its per-tool cap counts every step. */
  readonly #tool: string;
  readonly #payments: (PaymentInfo & { action: string })[] = [];
  /** What the person approved for the whole tool call, when it is above their line (mcp/approval.ts). */
  readonly #approved: bigint | undefined;

  constructor(ctx: McpContext, tool: string, approved?: bigint) {
    this.#ctx = ctx;
    this.#tool = tool;
    this.#approved = approved;
  }

  paidSoFar(): string {
    return atomicToUsdc(this.#payments.reduce((s, p) => s + usdcToAtomic(p.price), 0n));
  }

  receiptIds(): (string | null)[] {
    return this.#payments.map((p) => p.receiptId);
  }

  /** Calls one paid action; a failure is rethrown as `failure(step, message)` (step without the "x402." prefix). */
  async pay(
    name: string,
    params: Record<string, unknown>,
    body: Record<string, unknown> | undefined,
    failure: (step: string, message: string) => Error,
  ): Promise<Record<string, unknown>> {
    try {
      const r = await callAction(this.#ctx, action(name), params, body, { approved: this.#approved, payingTool: this.#tool });
      if (r.payment) this.#payments.push({ action: name, ...r.payment });
      return r.body;
    } catch (e) {
      // The step's own "Nothing was paid." would read as the whole tool call's, beside what earlier steps paid.
      throw failure(name.slice(5), (e as Error).message.replace(NOTHING_PAID, 'This step was not charged.'));
    }
  }
}
