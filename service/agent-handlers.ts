import type { AgentActionName } from '../shared/agent-api/catalogue.js';
import { discoveryHandlers } from './agent/discovery.js';
import type { AnyAgentHandler } from './agent/typed-handler.js';
import { datasetAgentHandlers } from './datasets/agent-handlers.js';
import { appAgentHandlers } from './sites/agent-handlers.js';
import { tableAgentHandlers } from './tables/agent-handlers.js';

/**
 * Action name → handler, assembled here beside app.ts (which hands it to agentRoutes), so agent/ never
 * imports the features and the features import only agent/'s handler types: no import loop. An action of the catalogue without a handler here answers 503
 * service_unavailable before any payment. Resources add theirs with one import + one spread line.
 */
export const agentHandlers: Partial<Record<AgentActionName, AnyAgentHandler>> = {
  ...discoveryHandlers,
  ...appAgentHandlers,
  ...tableAgentHandlers,
  ...datasetAgentHandlers,
};
