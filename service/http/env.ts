import type { Principal } from '../auth/principal.js';

/** Hono context variables set by middleware. */
export interface AppEnv {
  Variables: {
    requestId: string;
    principal: Principal;
  };
}
