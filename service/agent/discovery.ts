import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { describeApi, listPricing, type DiscoveryDocumentSchema, type PricingResponseSchema } from '../../shared/agent-api/actions/apps.js';
import { AGENT_ACTIONS, responseSchemaOf } from '../../shared/agent-api/catalogue.js';
import { X402_CURRENCY, X402_NETWORK } from '../../shared/agent-api/network.js';
import type { Config } from '../kernel/config.js';
import type { Deps } from '../deps.js';
import { DevChainFacilitator } from '../payments/dev-chain/dev-facilitator.js';
import { priceOf } from '../payments/prices.js';
import { offerReceiptSignerOf } from '../payments/offer-receipt.js';
import { handlerFor } from './typed-handler.js';

type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
};

function pathParams(action: AgentAction): string[] {
  return [...action.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
}

/** JSON Schema of everything an action takes: path parameters and body fields in one object. */
export function inputJsonSchemaOf(action: AgentAction): Record<string, unknown> {
  const body = z.toJSONSchema(action.input, { io: 'input', unrepresentable: 'any' }) as JsonSchema & Record<string, unknown>;
  const params = z.toJSONSchema(action.params, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const { $schema: _ignored, ...rest } = body as Record<string, unknown>;
  const properties: Record<string, JsonSchema> = {};
  for (const [k, v] of Object.entries(params.properties ?? {}))
    properties[k] = { ...v, description: `${v.description ? `${v.description} ` : ''}(path parameter)` };
  Object.assign(properties, body.properties ?? {});
  const required = [...(params.required ?? []), ...(body.required ?? [])];
  return { ...rest, type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
}

function typeText(s: JsonSchema | undefined): string {
  if (!s) return 'any';
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.anyOf) return s.anyOf.map(typeText).join(' | ');
  if (s.type === 'array') return `array of ${typeText(s.items)}`;
  if (s.type === 'object' && s.properties) return `{${Object.keys(s.properties).join(', ')}}`;
  return s.type ?? 'any';
}

function fieldsText(s: JsonSchema, extra: string[] = []): string {
  const req = new Set(s.required ?? []);
  const parts = Object.entries(s.properties ?? {}).map(([k, v]) => `${k} (${typeText(v)}${req.has(k) ? ', required' : ''})`);
  return [...parts, ...extra].join('; ');
}

export function inputSummaryOf(action: AgentAction): string {
  const params = pathParams(action);
  const body = z.toJSONSchema(action.input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const bodyText = Object.keys(body.properties ?? {}).length ? `JSON body: ${fieldsText(body)}` : 'no body';
  return params.length ? `path: ${params.join(', ')}; ${bodyText}` : bodyText;
}

export function outputSummaryOf(action: AgentAction): string {
  const out = z.toJSONSchema(responseSchemaOf(action), { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  return `JSON: ${fieldsText(out)}`;
}

/** `devRpcUrl`: the dev chain's RPC URL, published in development mode only. */
export function buildDiscoveryDocument(config: Config, devRpcUrl?: string): z.output<typeof DiscoveryDocumentSchema> {
  return {
    ok: true,
    service: 'svc Agent API',
    purpose:
      'Create and manage hosted HTML apps, their files, Table APIs and data-file APIs, paid per call in USDC over x402. The paying wallet is the caller identity and owns what it creates.',
    network: X402_NETWORK,
    recipient: config.x402.recipient,
    currency: X402_CURRENCY,
    pricingUpdatedAt: config.x402.pricesUpdatedAt,
    payment:
      'Call the endpoint; a paid one answers 402 with payment requirements (x402 v1 JSON body with network "base", and the v2 PAYMENT-REQUIRED header with network eip155:8453). ' +
      'Sign an EIP-3009 TransferWithAuthorization for exactly the price to the recipient (USDC, EIP-712 domain "USD Coin" version "2", chain 8453) and retry with X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2). ' +
      'The work is done and the payment settled together; every paid answer carries a receipt. Free actions that need the wallet (list_apps) take a zero-value authorization. ' +
      'Retries never pay twice: send the same payment again, or an Idempotency-Key header.',
    endpoints: AGENT_ACTIONS.map((a) => {
      const action = a as AgentAction;
      const { price, updatedAt } = priceOf(config, action);
      return {
        action: action.name,
        method: action.method,
        path: action.path,
        description: action.description,
        input: inputSummaryOf(action),
        inputSchema: inputJsonSchemaOf(action),
        output: outputSummaryOf(action),
        price,
        priceUpdatedAt: updatedAt,
      };
    }),
    ...(config.x402.mode === 'dev' && devRpcUrl ? { rpcUrl: devRpcUrl } : {}),
  };
}

export function buildPricing(config: Config): Omit<z.output<typeof PricingResponseSchema>, 'ok'> {
  return {
    currency: X402_CURRENCY,
    network: X402_NETWORK,
    recipient: config.x402.recipient,
    pricingUpdatedAt: config.x402.pricesUpdatedAt,
    pricing: AGENT_ACTIONS.map((a) => {
      const { price, amount, updatedAt } = priceOf(config, a as AgentAction);
      return {
        action: a.name,
        method: a.method,
        path: a.path,
        price,
        amount: amount.toString(),
        currency: X402_CURRENCY,
        network: X402_NETWORK,
        priceUpdatedAt: updatedAt,
      };
    }),
  };
}

/** The dev chain's RPC URL once it runs (it starts with the service); undefined in other modes. */
function devChainRpcUrl(deps: Deps): string | undefined {
  const f = deps.facilitator;
  if (!(f instanceof DevChainFacilitator)) return undefined;
  return f.rpcUrl || undefined;
}

/**
 * Both documents follow from the configuration alone (prices are configured, the catalogue is code),
 * so each is built once per configuration, not per request: the discovery document converts every
 * action's zod schemas to JSON Schema.
 */
const discoveryDocuments = new WeakMap<Config, Map<string, ReturnType<typeof buildDiscoveryDocument>>>();
const pricingDocuments = new WeakMap<Config, ReturnType<typeof buildPricing>>();

function discoveryDocumentOf(config: Config, devRpcUrl: string | undefined): ReturnType<typeof buildDiscoveryDocument> {
  const byRpc = discoveryDocuments.get(config) ?? new Map<string, ReturnType<typeof buildDiscoveryDocument>>();
  discoveryDocuments.set(config, byRpc);
  const doc = byRpc.get(devRpcUrl ?? '') ?? buildDiscoveryDocument(config, devRpcUrl);
  byRpc.set(devRpcUrl ?? '', doc);
  return doc;
}

function pricingOf(config: Config): ReturnType<typeof buildPricing> {
  const doc = pricingDocuments.get(config) ?? buildPricing(config);
  pricingDocuments.set(config, doc);
  return doc;
}

export const discoveryHandlers = {
  [describeApi.name]: handlerFor(describeApi, {
    async run({ deps }) {
      const { ok: _ok, ...doc } = discoveryDocumentOf(deps.config, devChainRpcUrl(deps));
      return { result: { ...doc, receiptSigner: offerReceiptSignerOf(deps).address }, app: null };
    },
  }),
  [listPricing.name]: handlerFor(listPricing, {
    async run({ deps }) {
      return { result: pricingOf(deps.config), app: null };
    },
  }),
};
