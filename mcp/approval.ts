import { type InputRequiredResult, PROTOCOL_VERSION_META_KEY, type ServerContext } from '@modelcontextprotocol/server';
import { atomicToUsdc } from '../shared/money.js';
import { aboveApprovalLine, WalletError } from '../wallet/errors.js';
import { headroom } from '../wallet/ledger.js';
import type { Question } from './ask-person.js';
import type { McpContext } from './context.js';

/**
 * Approval above a line (SVC_APPROVAL_ABOVE): before svc-mcp signs a payment above the person's
 * line, it asks the person through a form elicitation, once per tool call (a composite asks once for
 * its whole quoted total). The answer reaches the wallet as `approved` (the amount approved), and the
 * wallet refuses to sign above the line without it (wallet/errors.ts `assertApproved`): a path that
 * forgot to ask is refused, never paid.
 *
 * How the person is asked depends on the request:
 * - MCP 2026-07-28 (any transport): the call answers `input_required` with the form and a sealed
 *   state (mcp/ask-person.ts); the client asks the person and repeats the call;
 * - MCP 2025 over stdio (a session with a way back to the client): an `elicitation/create` request;
 * - anything else (a 2025 request over stateless HTTP, a client without form elicitation): nobody can
 *   be asked, so the payment is refused with nothing signed, naming the person's setting.
 */

/** One tool call's payment(s), as the person is asked about it. */
export interface PaymentToApprove {
  tool: string;
  /** The call's arguments: an approval is for this call only. */
  args: unknown;
  /** What the call will do, in a few words ("publishes the app \"shop\" (1 file)"). */
  what: string;
  /** The most it may sign, atomic USDC (a composite: its whole quoted total). */
  amount: bigint;
  /**
   * What the wallet would refuse anyway (caps, payee), checked before the person is asked: nobody is
   * asked to approve a payment that cannot be made. A composite has checked its plan already.
   */
  precheck?: () => Promise<void>;
}

export type Approval =
  /** Go on: pay at most `approved` (pass it to the wallet). */
  | { kind: 'approved'; approved: bigint | undefined }
  /** Return `result` from the tool: the client asks the person and repeats the call. */
  | { kind: 'ask'; result: InputRequiredResult };

/** The form's one field: the person ticks it to approve. */
const APPROVE = 'approve';

export async function approvePayment(ctx: McpContext, extra: ServerContext, payment: PaymentToApprove): Promise<Approval> {
  const line = ctx.wallet.config.approvalAbove;
  if (line === undefined || !aboveApprovalLine(line, payment.amount)) return { kind: 'approved', approved: undefined };
  await payment.precheck?.();
  const question = await questionFor(ctx, payment);
  const refuse = (why: string, code: 'approval_required' | 'approval_declined' = 'approval_required') =>
    new WalletError(
      code,
      `${payment.tool} was not paid: ${why}. Nothing was signed or paid. Payments above ${atomicToUsdc(line)} USDC need the person's approval (SVC_APPROVAL_ABOVE, their setting: no tool argument, token or retry changes it).`,
      'none',
      { approvalAbove: atomicToUsdc(line), price: atomicToUsdc(payment.amount) },
    );
  const approved = { kind: 'approved', approved: payment.amount } as const;
  if (isModernRequest(extra)) {
    if (!ctx.askPerson) throw refuse('this server cannot ask the person');
    // The amount is sealed with the arguments: a repeated call that would now sign more is another call.
    const asked = await ctx.askPerson.ask(
      extra,
      { tool: payment.tool, args: { args: payment.args, amount: String(payment.amount) }, caller: 'svc-mcp' },
      question,
    );
    switch (asked.kind) {
      case 'ask':
        return asked;
      case 'accepted':
        if (asked.content[APPROVE] === true) return approved;
        throw refuse('the person did not tick "approve"', 'approval_declined');
      case 'declined':
      case 'cancelled':
        throw refuse(`the person ${asked.kind} the payment`, 'approval_declined');
      case 'refused':
        throw refuse(`${asked.why}; call the tool again to be asked anew`);
      case 'cannot-ask':
        throw refuse('this client cannot ask the person (it declares no form elicitation)');
    }
  }
  if (!ctx.askOverSession)
    throw refuse('a 2025-era request over HTTP has no way back to the person (connect over stdio, or with MCP 2026-07-28 and form elicitation)');
  let answer: { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };
  try {
    // Sent as the request itself, not through elicitInput: that one requires `elicitation.form`, while
    // a 2025 client's bare `elicitation: {}` means form too (the rule before modes); the SDK still
    // refuses a client that declared no elicitation at all.
    answer = await extra.mcpReq.send({ method: 'elicitation/create', params: { mode: 'form', ...question } });
  } catch (e) {
    throw refuse(`this client cannot ask the person (${(e as Error).message})`);
  }
  if (answer.action === 'accept' && answer.content?.[APPROVE] === true) return approved;
  throw refuse(
    answer.action === 'accept' ? 'the person did not tick "approve"' : `the person ${answer.action === 'decline' ? 'declined' : 'cancelled'} the payment`,
    'approval_declined',
  );
}

/** The form: the tool, what it does, the price, the payee's service, what the caps leave after it. */
async function questionFor(ctx: McpContext, payment: PaymentToApprove): Promise<Question> {
  const caps = ctx.wallet.config.caps;
  const h = headroom(await ctx.wallet.ledger.totals(), caps);
  const after = (left: bigint) => atomicToUsdc(left > payment.amount ? left - payment.amount : 0n);
  const left = [`this session ${after(h.session)}`, `today ${after(h.day)}`, ...(h.total === undefined ? [] : [`in all ${after(h.total)}`])].join(', ');
  return {
    message: [
      `Pay ${atomicToUsdc(payment.amount)} USDC from wallet ${ctx.wallet.address ?? '(none)'} to ${new URL(ctx.config.serviceUrl).host}?`,
      `${payment.tool}: ${payment.what}.`,
      `Your caps leave after it: ${left} USDC.`,
    ].join('\n'),
    requestedSchema: {
      type: 'object',
      properties: { [APPROVE]: { type: 'boolean', title: `Approve paying ${atomicToUsdc(payment.amount)} USDC`, default: false } },
      required: [APPROVE],
    },
  };
}

function isModernRequest(extra: ServerContext): boolean {
  return (extra.mcpReq.envelope as Record<string, unknown> | undefined)?.[PROTOCOL_VERSION_META_KEY] !== undefined;
}

/** "appName \"shop\", path \"index.html\"": the call's short text arguments, to name what it acts on. */
export function namedArguments(args: Record<string, unknown>): string {
  const named = Object.entries(args)
    .filter(([k, v]) => typeof v === 'string' && v.length <= 80 && k !== 'maxPrice' && !/html|content|data|body/i.test(k))
    .map(([k, v]) => `${k} ${JSON.stringify(v)}`);
  return named.length ? named.join(', ') : 'no named arguments';
}
