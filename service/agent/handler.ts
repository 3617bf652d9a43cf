import type { DbOrTx } from '../db/client.js';
import type { Deps } from '../deps.js';

/**
 * The contract between the paid Agent API machinery (service/agent, service/payments) and the
 * resources that implement actions (sites, tables, datasets). One handler per catalogue action;
 * the registry in service/agent-handlers.ts maps action names to handlers.
 *
 * Order of a paid call: zod-validate params/body → `check` (free: ownership, quotas, input rules;
 * a 4xx here costs nothing) → verify payment → `run` inside a transaction → settle → commit →
 * receipt. If settlement fails the transaction rolls back: the wallet pays iff the work is durable.
 */
export interface AgentCall<P = Record<string, string>, I = unknown> {
  deps: Deps;
  /** The paying wallet, lower-case 0x address: the caller's identity and the owner of its apps. */
  wallet: string;
  params: P;
  input: I;
}

/** The app an action touched; its fields go into the receipt (appId, appName, visibility). */
export interface TouchedApp {
  id: string;
  slug: string;
  visibility: 'public' | 'private';
}

export interface AgentWork<O> {
  result: O;
  app: TouchedApp | null;
  /** Runs after commit (e.g. deleting blobs of a deleted app); failures are logged, not returned. */
  afterCommit?: () => Promise<void>;
}

export interface AgentHandler<P = Record<string, string>, I = unknown, O = unknown, S = unknown> {
  /** Free checks before any payment; returns state handed to `run` (e.g. the owned site row). */
  check?(call: AgentCall<P, I>): Promise<S>;
  /**
   * The work, inside the transaction that commits only after the payment settled; a free read-only
   * action gets the database itself (its reads need no transaction: BEGIN and COMMIT were two of its
   * three statements).
   */
  run(call: AgentCall<P, I> & { tx: DbOrTx; state: S }): Promise<AgentWork<O>>;
}
