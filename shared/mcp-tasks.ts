/**
 * The tasks of the MCP Tasks extension (mcp/tasks/extension.ts) as their stores keep them: svc-mcp in
 * its process (mcp/tasks/store.ts), the hosted endpoints in the service's database
 * (service/mcp-tasks/task-store.ts). Here because both layers implement the one interface.
 *
 * A task belongs to the caller that started it (`owner`: a digest of its credential): another caller
 * asking for it is told it does not exist, as it is for an id nobody made.
 */

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** A JSON-RPC error, as a failed task carries it. */
export interface TaskError {
  code: number;
  message: string;
  data?: unknown;
}

export interface StoredTask {
  taskId: string;
  owner: string;
  tool: string;
  status: TaskStatus;
  statusMessage: string | null;
  createdAt: Date;
  lastUpdatedAt: Date;
  /** How long the task is kept from its creation. */
  ttlMs: number;
  /** completed: the tool's result (a CallToolResult). */
  result: Record<string, unknown> | null;
  /** failed: the JSON-RPC error the call ended with. */
  error: TaskError | null;
  /** The caller asked to cancel it; the running work checks this between its steps. */
  cancelRequested: boolean;
  /** Until when the node running it has said it is alive; a working task past this is failed by whoever reads it. */
  leaseUntil: Date;
}

/** How a task ended, as its work records it (once: a task that has ended keeps its first outcome). */
export type TaskOutcome =
  | { status: 'completed'; result: Record<string, unknown> }
  | { status: 'failed'; error: TaskError; statusMessage: string }
  | { status: 'cancelled'; statusMessage: string };

export interface TaskStore {
  /** Records a new working task; resolves once a `get` of it, on any node, finds it. */
  create(task: Pick<StoredTask, 'taskId' | 'owner' | 'tool' | 'statusMessage' | 'ttlMs' | 'leaseUntil'>, now: Date): Promise<StoredTask>;
  /** The task, when it exists for this owner and has not expired. */
  get(taskId: string, owner: string, now: Date): Promise<StoredTask | undefined>;
  /** The running work's progress: a new status message and lease. Answers whether the caller asked to cancel. */
  report(taskId: string, statusMessage: string | null, leaseUntil: Date, now: Date): Promise<{ cancelRequested: boolean }>;
  /** Ends a working task; false when it had ended already (its first outcome stays). */
  finish(taskId: string, outcome: TaskOutcome, now: Date): Promise<boolean>;
  /** Marks a task of this owner for cancellation; undefined when there is none. */
  requestCancel(taskId: string, owner: string, now: Date): Promise<StoredTask | undefined>;
  /** A working task whose lease lapsed (its node stopped): failed with `outcome`, when it still is. */
  failLapsed(taskId: string, outcome: Extract<TaskOutcome, { status: 'failed' }>, now: Date): Promise<void>;
}

export const isTerminal = (status: TaskStatus): boolean => status === 'completed' || status === 'failed' || status === 'cancelled';
