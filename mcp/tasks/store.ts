import { isTerminal, type StoredTask, type TaskStore } from '../../shared/mcp-tasks.js';

/**
 * Where svc-mcp keeps the tasks of the MCP Tasks extension (mcp/tasks/extension.ts): in its process,
 * since one process serves its client. The hosted endpoints keep theirs in the service's database
 * (service/mcp-tasks/task-store.ts), so that any node answers `tasks/get` and `tasks/cancel` for a
 * task another node runs. Tasks past their time to live are dropped.
 */
export function tasksInMemory(): TaskStore {
  const tasks = new Map<string, StoredTask>();
  const forgetExpired = (now: Date) => {
    for (const [id, t] of tasks) if (t.createdAt.getTime() + t.ttlMs <= now.getTime()) tasks.delete(id);
  };
  const live = (taskId: string, now: Date) => {
    forgetExpired(now);
    return tasks.get(taskId);
  };
  return {
    async create(task, now) {
      forgetExpired(now);
      const stored: StoredTask = { ...task, status: 'working', createdAt: now, lastUpdatedAt: now, result: null, error: null, cancelRequested: false };
      tasks.set(task.taskId, stored);
      return { ...stored };
    },
    async get(taskId, owner, now) {
      const t = live(taskId, now);
      return t && t.owner === owner ? { ...t } : undefined;
    },
    async report(taskId, statusMessage, leaseUntil, now) {
      const t = tasks.get(taskId);
      if (!t) return { cancelRequested: false };
      if (!isTerminal(t.status)) Object.assign(t, { statusMessage, leaseUntil, lastUpdatedAt: now });
      return { cancelRequested: t.cancelRequested };
    },
    async finish(taskId, outcome, now) {
      const t = tasks.get(taskId);
      if (!t || isTerminal(t.status)) return false;
      Object.assign(t, { statusMessage: null, result: null, error: null, ...outcome, lastUpdatedAt: now });
      return true;
    },
    async requestCancel(taskId, owner, now) {
      const t = live(taskId, now);
      if (!t || t.owner !== owner) return undefined;
      if (!isTerminal(t.status)) Object.assign(t, { cancelRequested: true, lastUpdatedAt: now });
      return { ...t };
    },
    async failLapsed(taskId, outcome, now) {
      const t = tasks.get(taskId);
      if (t && !isTerminal(t.status) && t.leaseUntil.getTime() <= now.getTime()) Object.assign(t, { ...outcome, lastUpdatedAt: now });
    },
  };
}
