import { Hono, type Context } from 'hono';
import type { AgentAction } from '../../shared/agent-api/action.js';
import { AGENT_ACTIONS } from '../../shared/agent-api/catalogue.js';
import type { Deps } from '../deps.js';
import { AppError } from '../kernel/app-error.js';
import type { AppEnv } from '../kernel/request-env.js';
import { respondWithError, validationError } from '../http/handle-error.js';
import { checksDeclaredFields } from '../../shared/undeclared-fields.js';
import { refuseUndeclaredFields } from '../http/known-fields.js';
import { runFreeAction, runIdentityAction, type AgentAnswer } from './paid-call.js';
import { PaymentRequiredError, paymentRequiredResponse, v2AcceptsOf } from '../payments/payment-required.js';
import { offerReceiptSignerOf, offersExtension } from '../payments/offer-receipt.js';
import type { AnyAgentHandler } from './typed-handler.js';
import { priceOf } from '../payments/prices.js';
import { siwxDeclaration } from '../payments/sign-in-with-x.js';
import { httpDiscoveryOf } from '../payments/bazaar.js';

/**
 * The x402 v2 extensions a 402 of this action declares: Bazaar discovery (input, output hint), and
 * by its price: Sign-In-With-X where the call is free and only the wallet's identity is asked, the
 * signed offers of its `accepts` (offer-receipt.ts) where it is paid.
 */
async function paymentExtensions(deps: Deps, action: AgentAction, resource: string, params: Record<string, string>): Promise<Record<string, unknown>> {
  const now = deps.clock.now();
  const byPrice =
    priceOf(deps.config, action).amount === 0n
      ? siwxDeclaration(deps.config, resource, now)
      : offersExtension(await offerReceiptSignerOf(deps).offers(resource, v2AcceptsOf(deps.config, action), now));
  return { ...httpDiscoveryOf(action, params), ...byPrice };
}

async function readBody(c: Context, action: AgentAction): Promise<unknown> {
  if (action.method === 'GET' || action.method === 'DELETE') return {};
  const text = await c.req.text();
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError('bad_request', `body is not valid JSON: ${(e as Error).message}`);
  }
}

/**
 * The Agent API (`/api/x402…`), generated from the catalogue: one route per action. Every request is
 * validated by the action's zod schemas first (400, free; a body field the schema does not declare
 * too, http/known-fields.ts), an action without a handler answers 503
 * (free), and identity actions go through the payment flow (service/payments/paid-call.ts).
 */
export function agentRoutes(deps: Deps, handlers: Partial<Record<string, AnyAgentHandler>>): Hono<AppEnv> {
  const r = new Hono<AppEnv>();
  for (const a of AGENT_ACTIONS) {
    const action = a as AgentAction;
    const method = action.method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
    const checked = checksDeclaredFields(action.input);
    r[method](action.path, async (c) => {
      const resource = `${deps.config.baseUrl}${c.req.path}`;
      try {
        const params = action.params.safeParse(c.req.param());
        if (!params.success) throw validationError(params.error, 'path');
        const body = await readBody(c, action);
        if (checked) refuseUndeclaredFields(body, action.input);
        const input = action.input.safeParse(body);
        if (!input.success) throw validationError(input.error, 'body');
        const handler = handlers[action.name];
        if (!handler) {
          throw new AppError('service_unavailable', `${action.name} is not available on this deployment yet; nothing was charged`);
        }
        const req = {
          action,
          handler,
          params: params.data as Record<string, string>,
          input: input.data,
          resource,
          header: (name: string) => c.req.header(name),
        };
        const answer: AgentAnswer = action.identity ? await runIdentityAction(deps, req) : await runFreeAction(deps, req);
        return c.json(answer.body, answer.status as 200, answer.headers);
      } catch (e) {
        if (e instanceof PaymentRequiredError) {
          deps.metrics.payments.inc({ outcome: e.reason === 'payment_required' ? 'required' : 'refused' });
          const extensions = await paymentExtensions(deps, action, resource, c.req.param());
          return paymentRequiredResponse(deps.config, { action, resource, extensions }, e.reason, e.message);
        }
        return respondWithError(c, e, deps.log);
      }
    });
  }
  return r;
}
