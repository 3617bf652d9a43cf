import type { McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { usdcToAtomic } from '../../shared/money.js';
import { X402_META } from '../failures.js';
import { accountToolInstead, callAction } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import type { Extra } from './paid-steps.js';
import { addTool, addUnavailableTool } from '../register.js';
import { GET_A_WALLET } from '../../wallet/errors.js';
import { accountToolNote, composesForAccount } from './account-tools.js';
import { guarded, okResult } from '../results.js';
import { approvePayment, namedArguments } from '../approval.js';
import { madeTableNextStep, type MadeTable } from '../table-next-step.js';
import { maxPriceArg } from '../schemas.js';
import { answerInToolWords, asToolArgSchema, serviceArgName, toolArgName } from '../vocabulary.js';

/** Whether a tool can neither write nor pay: the only kind SVC_READ_ONLY=1 keeps. */
export function isReadOnlyAction(action: AgentAction, price: string): boolean {
  return action.readOnly && usdcToAtomic(price) === 0n;
}

/** The price, after the catalogue's description (which says how a free action's wallet proves itself). */
function priceSentence(ctx: McpContext, price: string): string {
  if (usdcToAtomic(price) === 0n) return 'Free.';
  if (ctx.hosted) return `Costs ${price} USDC, paid by your wallet (x402: the result asks for payment; retry with _meta["x402/payment"]).`;
  return `Costs ${price} USDC from the wallet, within its caps.`;
}

/**
 * Hosted: a paid tool's price in `tools/list`, as x402 clients read it before calling (Apify's mcpc
 * budgets and pre-signs from it): `_meta.x402 = {paymentRequired: true, accepts}`, the very `accepts`
 * the tool's PaymentRequired carries (the service builds both from its prices). svc-mcp's own tools
 * list none: its wallet pays, and a client that signed from it would pay a second time.
 */
function priceMeta(ctx: McpContext, action: AgentAction): Record<string, unknown> | undefined {
  const accepts = ctx.hosted ? ctx.paymentAccepts?.(action) : undefined;
  return accepts?.length ? { [X402_META.toolPrice]: { paymentRequired: true, accepts } } : undefined;
}

interface ToolShape {
  /** Tool argument → the service's path parameter. */
  params: Map<string, string>;
  /** Tool argument → the service's body field. */
  body: Map<string, string>;
  input: Record<string, z.core.$ZodType>;
}
// zod schemas are immutable: built once per action and reused by every server (the HTTP transports
// build one server per request).
const shapeCache = new Map<string, ToolShape>();

function toolShape(action: AgentAction, paid: boolean): ToolShape {
  const key = `${action.name}:${paid}`;
  let hit = shapeCache.get(key);
  if (!hit) {
    const bodyShape = action.input instanceof z.ZodObject ? (action.input.shape as z.ZodRawShape) : {};
    const params = new Map<string, string>();
    const body = new Map<string, string>();
    const input: Record<string, z.core.$ZodType> = {};
    for (const [k, schema] of Object.entries(action.params.shape as z.ZodRawShape)) {
      params.set(toolArgName(action.name, k), k);
      input[toolArgName(action.name, k)] = asToolArgSchema(toolArgName(action.name, k), schema);
    }
    for (const [k, schema] of Object.entries(bodyShape)) {
      body.set(toolArgName(action.name, k), k);
      input[toolArgName(action.name, k)] = schema;
    }
    if (paid) input.maxPrice = maxPriceArg;
    hit = { params, body, input };
    shapeCache.set(key, hit);
  }
  return hit;
}

const inputJsonSchemas = new WeakMap<ToolShape, Record<string, unknown>>();

/** The tool's input as JSON Schema, as tools/list shows it (Bazaar discovery of the tool in a PaymentRequired). */
function toolInputJsonSchema(shape: ToolShape): Record<string, unknown> {
  let schema = inputJsonSchemas.get(shape);
  if (!schema) {
    const { $schema: _s, ...rest } = z.toJSONSchema(z.object(shape.input), { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
    schema = rest;
    inputJsonSchemas.set(shape, schema);
  }
  return schema;
}

/** Why a wallet tool is not in a server with a personal key and no wallet, and what to call instead. */
function withoutWallet(tool: string): string {
  const instead = accountToolInstead(tool);
  return `${tool} acts as a wallet (it pays, or signs as the owner), and this server has a personal key but no wallet: ${
    instead ? `${instead} does this for the account, free.` : `nothing does it for the account. ${GET_A_WALLET}`
  }`;
}

/** What is said of the account's tool that does what wallet tool `tool` does, where `tool` is not listed. */
function listedAccountTool(ctx: McpContext, tool: string): string | undefined {
  const instead = accountToolInstead(tool);
  return instead ? accountToolNote(ctx, instead) : undefined;
}

/**
 * One MCP tool per catalogue action, generated: name = action without `x402.`, input = path params +
 * body fields in the tools' vocabulary (+ maxPrice where the local wallet pays), annotations from the
 * catalogue flags, the service's price in the description. Which tools exist and their inputs follow
 * the catalogue (the same list whenever the service's prices arrive); a call checks the service's
 * price (read-only mode pays for nothing). Results are the service's answer as structured content;
 * no output schema (it doubled the size of the tool list and earned nothing).
 */
export function registerActionTools(server: McpServer, ctx: McpContext): void {
  const forAccount = composesForAccount(ctx);
  for (const action of AGENT_ACTIONS as readonly AgentAction[]) {
    if (ctx.config.readOnly && !isReadOnlyAction(action, action.price)) continue;
    const name = toolNameOf(action);
    // A personal key and no wallet: what needs the wallet is not listed (create_table_api was 1,600
    // characters of every such list); a call names the account's tool that does it.
    if (forAccount && action.identity) {
      addUnavailableTool(server, name, withoutWallet(name));
      continue;
    }
    const shape = toolShape(action, !ctx.hosted && usdcToAtomic(action.price) > 0n);
    addTool(
      server,
      ctx,
      name,
      {
        description: () => `${action.description} ${priceSentence(ctx, priceOf(ctx, action.name))}`,
        inputSchema: shape.input,
        _meta: priceMeta(ctx, action),
        instead: listedAccountTool(ctx, name),
      },
      (args: Record<string, unknown>, extra: Extra) =>
        guarded(async () => {
          const { maxPrice, ...rest } = args as Record<string, unknown> & { maxPrice?: string };
          const params: Record<string, unknown> = {};
          const body: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(rest)) {
            const param = shape.params.get(k);
            if (param) params[param] = v;
            else body[shape.body.get(k) ?? serviceArgName(action.name, k)] = v;
          }
          const hasBody = action.method === 'POST' || action.method === 'PATCH';
          // The most this call may sign: above the person's line, they are asked first (mcp/approval.ts).
          const quote = maxPrice ?? priceOf(ctx, action.name);
          const approval = ctx.hosted
            ? undefined
            : await approvePayment(ctx, extra, {
                tool: name,
                args,
                what: namedArguments(rest),
                amount: usdcToAtomic(quote),
                precheck: () => ctx.wallet.precheck(action.name, quote),
              });
          if (approval?.kind === 'ask') return approval.result as never;
          const result = await callAction(ctx, action, params, hasBody ? body : undefined, {
            maxPrice,
            approved: approval?.approved,
            meta: extra.mcpReq._meta,
            tool: () => ({
              name,
              description: `${action.description} ${priceSentence(ctx, priceOf(ctx, action.name))}`,
              inputSchema: toolInputJsonSchema(shape),
            }),
          });
          const { receipt, ...answer } = result.body as Record<string, unknown> & { receipt?: { receiptId?: string } };
          const paid = result.payment ? ` Paid ${result.payment.price} USDC (list_receipts).` : '';
          // A free read's answer is its JSON alone; a change says it was done, what follows and what it cost.
          const said = `${madeTableNextStep((answer.table ?? answer.asset) as MadeTable | undefined, !ctx.hosted)}${paid}`;
          const summary = said || !action.readOnly ? `${name} done.${said}` : undefined;
          const structured = {
            ...answerInToolWords(answer),
            ...(receipt?.receiptId ? { receiptId: receipt.receiptId } : {}),
            ...(result.payment ? { paid: result.payment.price } : {}),
          };
          return okResult(structured, summary, result.paymentResponse ? { [X402_META.paymentResponse]: result.paymentResponse } : undefined);
        }),
    );
  }
}
