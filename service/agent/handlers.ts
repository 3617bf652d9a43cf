import type { AgentActionName } from '../../shared/agent-api/catalogue.js';
import { datasetAgentHandlers } from '../datasets/agent-handlers.js';
import { appAgentHandlers } from '../sites/agent-handlers.js';
import { tableAgentHandlers } from '../tables/agent-handlers.js';
import { discoveryHandlers } from './discovery.js';
import type { AnyAgentHandler } from './typed-handler.js';

/**
 * Action name → handler. An action of the catalogue without a handler here answers 503
 * service_unavailable before any payment. Resources add theirs with one import + one spread line.
 */
export const agentHandlers: Partial<Record<AgentActionName, AnyAgentHandler>> = {
  ...discoveryHandlers,
  ...appAgentHandlers,
  ...tableAgentHandlers,
  ...datasetAgentHandlers,
};
