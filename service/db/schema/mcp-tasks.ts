import { boolean, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/**
 * The tasks of the hosted MCP endpoints (MCP Tasks extension: mcp/tasks/extension.ts,
 * service/mcp-tasks/task-store.ts): a long tool call answered with a task id, run by the node that
 * took the call, answered for by any node. Kept until `expires_at` (housekeeping deletes them).
 */
export const mcpTasks = pgTable(
  'mcp_tasks',
  {
    /** 256 random bits, base64url. */
    id: text('id').primaryKey(),
    /** The digest of the credential that started it: only that caller sees it. */
    owner: text('owner').notNull(),
    tool: text('tool').notNull(),
    /** working | completed | failed | cancelled (input_required is never used: questions are put before a call becomes a task). */
    status: text('status').notNull(),
    statusMessage: text('status_message'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
    ttlMs: integer('ttl_ms').notNull(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    /** completed: the tool's result (CallToolResult). */
    result: jsonb('result'),
    /** failed: the JSON-RPC error. */
    error: jsonb('error'),
    cancelRequested: boolean('cancel_requested').notNull().default(false),
    /** Until when the node running it has said it is alive. */
    leaseUntil: timestamp('lease_until', { withTimezone: true }).notNull(),
  },
  (t) => [index('mcp_tasks_expires_idx').on(t.expiresAt)],
);
