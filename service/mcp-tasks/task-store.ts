import { and, eq, gt, lt, lte, notInArray } from 'drizzle-orm';
import type { StoredTask, TaskStatus, TaskStore } from '../../shared/mcp-tasks.js';
import type { Db } from '../db/client.js';
import { mcpTasks } from '../db/schema/index.js';

/** The statuses past which a task never changes. */
const TERMINAL = ['completed', 'failed', 'cancelled'];

/**
 * The hosted endpoints' tasks (shared/mcp-tasks.ts), in the `mcp_tasks` table: the node that took the
 * call runs the work and writes its progress and outcome; every node reads them. Each change is one
 * conditional statement, so an outcome is written once, and a cancellation or a lapsed lease never
 * overwrites a task that has ended.
 */
export function taskStoreInDb(db: Db): TaskStore {
  const row = (r: typeof mcpTasks.$inferSelect): StoredTask => ({
    taskId: r.id,
    owner: r.owner,
    tool: r.tool,
    status: r.status as TaskStatus,
    statusMessage: r.statusMessage,
    createdAt: r.createdAt,
    lastUpdatedAt: r.updatedAt,
    ttlMs: r.ttlMs,
    result: (r.result as Record<string, unknown> | null) ?? null,
    error: (r.error as StoredTask['error']) ?? null,
    cancelRequested: r.cancelRequested,
    leaseUntil: r.leaseUntil,
  });
  const working = (taskId: string) => and(eq(mcpTasks.id, taskId), notInArray(mcpTasks.status, TERMINAL));
  return {
    async create(task, now) {
      const [created] = await db
        .insert(mcpTasks)
        .values({
          id: task.taskId,
          owner: task.owner,
          tool: task.tool,
          status: 'working',
          statusMessage: task.statusMessage,
          createdAt: now,
          updatedAt: now,
          ttlMs: task.ttlMs,
          expiresAt: new Date(now.getTime() + task.ttlMs),
          leaseUntil: task.leaseUntil,
        })
        .returning();
      return row(created!);
    },
    async get(taskId, owner, now) {
      const [found] = await db
        .select()
        .from(mcpTasks)
        .where(and(eq(mcpTasks.id, taskId), eq(mcpTasks.owner, owner), gt(mcpTasks.expiresAt, now)));
      return found ? row(found) : undefined;
    },
    async report(taskId, statusMessage, leaseUntil, now) {
      const [updated] = await db
        .update(mcpTasks)
        .set({ statusMessage, leaseUntil, updatedAt: now })
        .where(working(taskId))
        .returning({ cancelRequested: mcpTasks.cancelRequested });
      return { cancelRequested: updated?.cancelRequested ?? false };
    },
    async finish(taskId, outcome, now) {
      const updated = await db
        .update(mcpTasks)
        .set({
          status: outcome.status,
          statusMessage: 'statusMessage' in outcome ? outcome.statusMessage : null,
          result: outcome.status === 'completed' ? outcome.result : null,
          error: outcome.status === 'failed' ? outcome.error : null,
          updatedAt: now,
        })
        .where(working(taskId))
        .returning({ id: mcpTasks.id });
      return updated.length === 1;
    },
    async requestCancel(taskId, owner, now) {
      const mine = and(eq(mcpTasks.id, taskId), eq(mcpTasks.owner, owner), gt(mcpTasks.expiresAt, now));
      await db
        .update(mcpTasks)
        .set({ cancelRequested: true, updatedAt: now })
        .where(and(mine, notInArray(mcpTasks.status, TERMINAL)));
      const [found] = await db.select().from(mcpTasks).where(mine);
      return found ? row(found) : undefined;
    },
    async failLapsed(taskId, outcome, now) {
      await db
        .update(mcpTasks)
        .set({ status: 'failed', statusMessage: outcome.statusMessage, error: outcome.error, updatedAt: now })
        .where(and(working(taskId), lte(mcpTasks.leaseUntil, now)));
    },
  };
}

/** Housekeeping: deletes the tasks past their time to live; answers how many. */
export async function pruneExpiredTasks(db: Db, now: Date): Promise<number> {
  const deleted = await db.delete(mcpTasks).where(lt(mcpTasks.expiresAt, now)).returning({ id: mcpTasks.id });
  return deleted.length;
}
