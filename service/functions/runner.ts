import type { Config } from '../kernel/config.js';
import { inProcessRunner, SandboxPool, type SandboxRunner } from './sandbox-pool.js';

let shared: { size: number; runner: SandboxPool } | null = null;

/**
 * The process-wide sandbox runner: a pool of `config.functions.workers` worker threads (idle workers
 * never keep the process alive), or the calling thread when that is 0. Several apps in one process
 * (tests) share one pool.
 */
export function sandboxRunner(config: Config): SandboxRunner {
  const size = config.functions.workers;
  if (size <= 0) return inProcessRunner;
  if (!shared || shared.size !== size) {
    void shared?.runner.close();
    shared = { size, runner: new SandboxPool(size, { graceMs: 500, maxQueue: 1000 }) };
  }
  return shared.runner;
}
