import type { Db } from '../db/client.js';
import type { Clock } from '../kernel/clock.js';
import type { Config } from '../kernel/config.js';
import type { Logger } from '../kernel/logger.js';
import type { Facilitator } from './facilitator.js';

/**
 * What the payment functions use of the service's dependencies: payments is a leaf library, so it
 * names these parts itself instead of importing the service's `Deps` (which has them all).
 */
export interface PaymentDeps {
  config: Config;
  db: Db;
  clock: Clock;
  log: Logger;
  facilitator: Facilitator;
}
