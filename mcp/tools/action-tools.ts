import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS, responseSchemaOf, toolNameOf } from '../../shared/agent-api/catalogue.js';
import { usdcToAtomic } from '../../shared/money.js';
import { callAction, quoteAction } from '../agent-call.js';
import { priceOf, type McpContext } from '../context.js';
import { guarded, okResult } from '../results.js';
import { PaymentInfoSchema, QuoteSchema, dryRunArg, maxPriceArg } from '../schemas.js';

/** Whether a tool can neither write nor pay: the only kind SVC_READ_ONLY=1 keeps. */
export function isReadOnlyAction(action: AgentAction, price: string): boolean {
  return action.readOnly && usdcToAtomic(price) === 0n;
}

function priceSentence(action: AgentAction, price: string): string {
  if (usdcToAtomic(price) > 0n)
    return `Price: ${price} USDC per call, paid automatically from the configured wallet (x402 on Base) within its spend caps; dryRun: true shows the price and cap headroom without paying.`;
  if (action.identity) return 'Free: the wallet signs a zero-value authorization to prove it owns the apps; no money moves.';
  return 'Free.';
}

interface ToolSchemas {
  paramKeys: string[];
  inputShape: z.ZodRawShape;
  outputSchema: z.ZodObject;
}
// zod schemas are immutable: built once per action and reused by every server (the HTTP transport
// builds one server per request).
const schemaCache = new Map<string, ToolSchemas>();

function toolSchemas(action: AgentAction, usesWallet: boolean): ToolSchemas {
  const key = `${action.name}:${usesWallet}`;
  let hit = schemaCache.get(key);
  if (!hit) {
    const bodyShape = action.input instanceof z.ZodObject ? (action.input.shape as z.ZodRawShape) : {};
    hit = {
      paramKeys: Object.keys(action.params.shape),
      inputShape: { ...action.params.shape, ...bodyShape, ...(usesWallet ? { dryRun: dryRunArg, maxPrice: maxPriceArg } : {}) },
      outputSchema: responseSchemaOf(action)
        .partial()
        .extend({
          dryRun: z.boolean().optional().describe('true when nothing was sent (quote only)'),
          quote: QuoteSchema.optional(),
          payment: PaymentInfoSchema.optional(),
        }),
    };
    schemaCache.set(key, hit);
  }
  return hit;
}

/**
 * One MCP tool per catalogue action, generated: name = action without `x402.`, input = path params
 * + body fields (+ dryRun / maxPrice for actions that use the wallet), output = the action's
 * response schema, annotations from the catalogue flags, price in the description and `_meta`.
 */
export function registerActionTools(server: McpServer, ctx: McpContext): string[] {
  const names: string[] = [];
  for (const action of AGENT_ACTIONS as readonly AgentAction[]) {
    const price = priceOf(ctx, action.name);
    if (ctx.config.readOnly && !isReadOnlyAction(action, price)) continue;
    const name = toolNameOf(action);
    const usesWallet = action.identity || usdcToAtomic(price) > 0n;
    const { paramKeys, inputShape, outputSchema } = toolSchemas(action, usesWallet);
    server.registerTool(
      name,
      {
        title: name.replace(/_/g, ' '),
        description: `${action.description} ${priceSentence(action, price)}`,
        inputSchema: inputShape,
        outputSchema,
        annotations: {
          title: name.replace(/_/g, ' '),
          readOnlyHint: action.readOnly,
          destructiveHint: action.destructive,
          idempotentHint: action.idempotent,
          openWorldHint: true,
        },
        _meta: { 'svc/action': action.name, 'svc/price': price, 'svc/currency': 'USDC', 'svc/method': action.method, 'svc/path': action.path },
      },
      (args: Record<string, unknown>) =>
        guarded(async () => {
          const { dryRun, maxPrice, ...rest } = args as Record<string, unknown> & { dryRun?: boolean; maxPrice?: string };
          if (dryRun) {
            const quote = await quoteAction(ctx, action, maxPrice ?? priceOf(ctx, action.name));
            return okResult(
              { dryRun: true, quote },
              `${name} would cost ${quote.price} USDC; ${quote.allowed ? 'the caps allow it' : `it would be refused: ${quote.refusal}`}. Nothing was sent or paid.`,
            );
          }
          const params: Record<string, unknown> = {};
          const body: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(rest)) (paramKeys.includes(k) ? params : body)[k] = v;
          const result = await callAction(ctx, action, params, action.method === 'GET' || action.method === 'DELETE' ? undefined : body, maxPrice);
          const summary = result.payment ? `${name} done; paid ${result.payment.price} USDC.` : `${name} done.`;
          return okResult({ ...result.body, payment: result.payment }, summary);
        }),
    );
    names.push(name);
  }
  return names;
}
