import fs from 'node:fs';
import path from 'node:path';
import { createAccount } from '../../service/accounts/accounts.js';
import { createPersonalKey } from '../../service/accounts/personal-keys.js';
import { openDb, type Database } from '../../service/db/client.js';
import { SCOPES } from '../../shared/scopes.js';
import { createEmptyPostgresDatabase } from './db.js';
import { startNode, type ServiceNode } from './nodes.js';
import { startS3Server } from './s3rver.js';

/** Several real service processes on one new PostgreSQL database and one bucket (s3rver): what a multi-node deployment shares. */
export interface Cluster {
  nodes: ServiceNode[];
  /** The database's URL, and a connection of the test's own to it (no migration). */
  databaseUrl: string;
  direct: Database;
  /** A new account and a personal key of every scope, made in the database (the key's secret). */
  accountKey(): Promise<string>;
  /** An operator operation through `node`'s admin endpoint (the URL and token its admin.json names). */
  admin(node: ServiceNode, operation: string, input: unknown): Promise<Response>;
  /** Stops everything it started, the last started first. */
  close(): Promise<void>;
}

/**
 * Starts `count` nodes (`svc-agent-host serve`, test/helpers/nodes.ts) together on an empty database
 * (the migration lock lets one of them migrate) and one bucket, each with `env` besides. Whatever
 * started is stopped again when a later part fails to start.
 */
export async function startCluster(count: number, env: Record<string, string> = {}): Promise<Cluster> {
  const started: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const stop of started.splice(0).reverse()) await stop().catch(() => {});
  };
  try {
    const database = await createEmptyPostgresDatabase();
    started.push(database.drop);
    const s3 = await startS3Server();
    started.push(s3.close);
    // Every start settles before a failure is thrown: a node still starting would escape `close`.
    const starts = await Promise.allSettled(
      Array.from({ length: count }, async () => {
        const node = await startNode(database.url, { ...s3.env, ...env });
        started.push(node.stop);
        return node;
      }),
    );
    const failed = starts.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    const nodes = starts.map((s) => (s as PromiseFulfilledResult<ServiceNode>).value);
    const direct = await openDb({ databaseUrl: database.url, migrate: false });
    started.push(() => direct.close());
    let accounts = 0;
    return {
      nodes,
      databaseUrl: database.url,
      direct,
      async accountKey() {
        const account = await createAccount(direct.db, { email: `cluster-${Date.now()}-${++accounts}@example.com` });
        return (await createPersonalKey(direct.db, { accountId: account.id, name: 'cluster', scopes: [...SCOPES] })).secret;
      },
      admin(node, operation, input) {
        const { url, token } = JSON.parse(fs.readFileSync(path.join(node.dataDir, 'admin.json'), 'utf8')) as { url: string; token: string };
        return fetch(`${url}/_admin/${operation}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-svc-admin-token': token },
          body: JSON.stringify(input),
        });
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}
