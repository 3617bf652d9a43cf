import type { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';
import type { AgentHandler } from './handler.js';

/** Result body of an action as a handler returns it: the catalogue output without `ok` (the route adds it). */
export type ActionResult<A extends AgentAction> = Omit<z.output<A['output']>, 'ok'>;

/** A handler typed by its catalogue action: params, input and result checked against the schemas. */
export type HandlerFor<A extends AgentAction, S = unknown> = AgentHandler<z.output<A['params']>, z.output<A['input']>, ActionResult<A>, S>;

/** Erased form stored in the registry. */
// biome-ignore lint/suspicious/noExplicitAny: the registry erases each handler's own input/output types
export type AnyAgentHandler = AgentHandler<any, any, any, any>;

export function handlerFor<A extends AgentAction, S = unknown>(_action: A, handler: HandlerFor<A, S>): AnyAgentHandler {
  return handler as AnyAgentHandler;
}
