import type { z } from 'zod';
import type { AgentAction } from './action.js';
import { APP_ACTIONS } from './actions/apps.js';
import { APP_VERSION_ACTIONS } from './actions/app-versions.js';
import { DATASET_ACTIONS } from './actions/datasets.js';
import { TABLE_ACTIONS } from './actions/tables.js';
import { ReceiptSchema } from './receipt.js';

/** Every Agent API action of spec §4.2, in the spec's order (versions of apps, ours, after the apps'). Names are stable: MCP tools and wallets key on them. */
export const AGENT_ACTIONS = [...APP_ACTIONS, ...APP_VERSION_ACTIONS, ...TABLE_ACTIONS, ...DATASET_ACTIONS] as const;

export type AgentActionName = (typeof AGENT_ACTIONS)[number]['name'];

/** Epoch ms at which the default (spec) prices took effect; deployments that override prices set their own. */
export const DEFAULT_PRICES_UPDATED_AT = Date.UTC(2026, 10, 21);

const byName = new Map<string, AgentAction>(AGENT_ACTIONS.map((a) => [a.name, a as AgentAction]));

export function actionByName(name: string): AgentAction | undefined {
  return byName.get(name);
}

/** The full success body of an action: its output plus `receipt` when the action needs the wallet. */
export function responseSchemaOf(action: AgentAction): z.ZodObject {
  return action.identity ? action.output.extend({ receipt: ReceiptSchema }) : action.output;
}

/** MCP tool name: the action name without `x402.`. */
export function toolNameOf(action: AgentAction): string {
  return action.name.slice('x402.'.length);
}
