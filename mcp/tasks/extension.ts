import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes } from 'node:crypto';
import type { CallToolResult, McpServer } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { advertisesExtension } from '../extensions.js';
import { ToolFailure } from '../failures.js';
import { isTerminal, type StoredTask, type TaskError, type TaskOutcome, type TaskStore } from '../../shared/mcp-tasks.js';

/** A request handler as the SDK's Protocol keeps it. */
type RequestHandler = (request: { params?: { name?: unknown } }, extra: unknown) => Promise<unknown>;

/**
 * The MCP Tasks extension (`io.modelcontextprotocol/tasks`, MCP 2026-07-28; the spec:
 * modelcontextprotocol/experimental-ext-tasks `specification/draft/tasks.md`): a long tool call
 * answers at once with a task (`resultType: "task"`), which the client polls with `tasks/get` until it
 * holds the tool's result, and may cancel with `tasks/cancel`.
 *
 * The server decides, per request, and only toward a request that advertised the extension in its
 * per-request capabilities. Here a tool decides where its call may become a task: it calls
 * `continueAsTask` once everything that must happen in the call itself is done (the questions put to
 * the person, `input_required`; the checks of its plan against the caps), just before the long work.
 * For a request that advertised the extension, the call is answered there with the task and the work
 * goes on; for any other request `continueAsTask` does nothing and the call answers when the work is
 * done, with progress notifications as before.
 *
 * While a task runs, the tool's progress becomes the task's status message, and between its steps the
 * work stops when the caller asked to cancel (cooperative, as the spec says: a step under way
 * finishes, and a paid step already signed is not taken back). A task belongs to the credential that
 * started it (another caller is told it does not exist). Where tasks are kept (TaskStore) decides who
 * can answer for them: the hosted endpoints keep them in the service's database, so any node answers
 * `tasks/get` for a task another node runs; the node running it renews a lease, and a task whose node
 * stopped is failed by the next `tasks/get` once its lease lapses.
 */

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** What a server with tasks adds to its capabilities (listed in `server/discover`). */
export const TASKS_EXTENSION_CAPABILITY = { [TASKS_EXTENSION]: {} } as const;

/** Where a face keeps its tasks (McpContext's `tasks`), and who the caller of the request being answered is (read when it starts): a task is theirs only. */
export interface TaskSettings {
  store: TaskStore;
  owner: () => string;
}

/** How long a task is kept after it starts (the spec's `ttlMs`). */
export const TASK_TTL_MS = 3_600_000;
/** How often the client is asked to poll. */
export const TASK_POLL_INTERVAL_MS = 1_000;
/** How long a running task's lease lasts without renewal (renewed every third of it). */
const LEASE_MS = 30_000;
const now = () => new Date();
/**
 * Tasks of one caller running at once on one process. A task frees the call's connection, which was
 * what bounded a caller's concurrent work; past this many, a call is answered in the call (its
 * connection held until the work is done), as for a client without tasks.
 */
export const MAX_RUNNING_TASKS_PER_CALLER = 4;
/** Running tasks by owner, on this process. */
const runningByOwner = new Map<string, number>();

/** The owner string of a credential: its digest (the credential itself is never stored). */
export const ownerOfCredential = (credential: string): string => createHash('sha256').update(credential).digest('base64url');

/** The call a tool is answering, while it may still become a task (or has become one). */
class TaskOffer {
  running: RunningTask | undefined;
  readonly detached: Promise<StoredTask>;
  #resolve!: (task: StoredTask) => void;

  constructor(
    readonly settings: TaskSettings,
    readonly owner: string,
    readonly tool: string,
    readonly onDetach: () => void,
  ) {
    this.detached = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Whether this caller may start another task on this process now. */
  get allowed(): boolean {
    return (runningByOwner.get(this.owner) ?? 0) < MAX_RUNNING_TASKS_PER_CALLER;
  }

  /** Makes the call a task; a task that cannot be recorded (the database unreachable) leaves the call to answer in the call. */
  async detach(statusMessage: string): Promise<void> {
    runningByOwner.set(this.owner, (runningByOwner.get(this.owner) ?? 0) + 1);
    try {
      await this.#start(statusMessage);
    } catch {
      this.release();
    }
  }

  /** The task's work has ended (or never started): one running task fewer for its caller. */
  release(): void {
    const left = (runningByOwner.get(this.owner) ?? 1) - 1;
    if (left > 0) runningByOwner.set(this.owner, left);
    else runningByOwner.delete(this.owner);
  }

  async #start(statusMessage: string): Promise<void> {
    const task = await this.settings.store.create(
      {
        // 256 random bits: a task id cannot be guessed (the spec lets a server treat it as a bearer token; here the owner must match too).
        taskId: randomBytes(32).toString('base64url'),
        owner: this.owner,
        tool: this.tool,
        statusMessage,
        ttlMs: TASK_TTL_MS,
        leaseUntil: new Date(now().getTime() + LEASE_MS),
      },
      now(),
    );
    this.running = new RunningTask(this.settings.store, task.taskId, statusMessage);
    this.onDetach();
    this.#resolve(task);
  }
}

/** A task's work under way: its progress and lease go to the store, and the caller's cancellation comes back. */
export class RunningTask {
  cancelRequested = false;
  /** The work stopped at a step because of the cancellation (TaskCancelled). */
  stoppedByCancel = false;
  readonly #heartbeat: NodeJS.Timeout;

  constructor(
    private readonly store: TaskStore,
    readonly taskId: string,
    private statusMessage: string,
  ) {
    this.#heartbeat = setInterval(() => void this.#renew().catch(() => undefined), LEASE_MS / 3);
    this.#heartbeat.unref();
  }

  async #renew(): Promise<void> {
    const { cancelRequested } = await this.store.report(this.taskId, this.statusMessage, new Date(now().getTime() + LEASE_MS), now());
    if (cancelRequested) this.cancelRequested = true;
  }

  /**
   * The work's progress (the task's status message); throws TaskCancelled when the caller asked to
   * cancel. A status that cannot be written stops nothing: the next renewal writes it, or the lease lapses.
   */
  async progress(message: string): Promise<void> {
    this.statusMessage = message;
    await this.#renew().catch(() => undefined);
    if (this.cancelRequested) {
      this.stoppedByCancel = true;
      throw new TaskCancelled(message);
    }
  }

  async finish(outcome: TaskOutcome): Promise<void> {
    clearInterval(this.#heartbeat);
    await this.store.finish(this.taskId, outcome, now());
  }
}

/** The work stopped between two steps because the caller cancelled its task. */
export class TaskCancelled extends ToolFailure {
  constructor(lastStep: string) {
    super(`Cancelled by the client; the last step done: ${lastStep}. Nothing after it was done or paid.`);
  }
}

const offers = new AsyncLocalStorage<TaskOffer>();

/**
 * Where a long tool's call may become a task (see above): answered here with a task when the request
 * advertised the extension, else nothing happens. `statusMessage` says what the task is doing.
 */
export async function continueAsTask(statusMessage: string): Promise<void> {
  const offer = offers.getStore();
  if (offer && !offer.running && offer.allowed) await offer.detach(statusMessage);
}

/** The task the current tool call runs as, if it became one. */
export const currentTask = (): RunningTask | undefined => offers.getStore()?.running;

/** Servers with a task's work still under way: never handed to another request (cli/hosted-mcp-servers.ts sets each request's caller on its server). */
const busy = new WeakSet<McpServer>();

/** Whether a pool may give this server to another request (mcp/stateless.ts). */
export const runsDetachedWork = (server: McpServer): boolean => busy.has(server);

/**
 * Answers tools/call with a task where the tool offers one (continueAsTask) and the request advertised
 * the extension, and answers tasks/get, tasks/update and tasks/cancel from the store.
 */
export function installTasks(server: McpServer, settings: TaskSettings): void {
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
  const inner = handlers.get('tools/call');
  if (inner)
    handlers.set('tools/call', async (request, extra) => {
      if (!advertisesExtension(extra, TASKS_EXTENSION)) return inner(request, extra);
      const offer = new TaskOffer(settings, settings.owner(), String(request.params?.name), () => busy.add(server));
      const work = offers.run(offer, () => inner(request, extra));
      const first = await Promise.race([work.then((result) => ({ result }) as const), offer.detached.then((task) => ({ task }) as const)]);
      if ('result' in first) return first.result;
      // Answered with the task; the work goes on and records how it ended.
      void work
        .then(
          (result) => offer.running!.finish(outcomeOf(offer.running!, result as CallToolResult)),
          (error: unknown) => offer.running!.finish(failureOf(error)),
        )
        .finally(() => offer.release())
        // An outcome that could not be written (the database unreachable): its lease lapses, and the
        // next tasks/get answers the task as failed.
        .catch(() => undefined);
      return { resultType: 'task', ...wireOf(first.task) };
    });

  /** The caller's task, failed first when its node stopped renewing its lease; a JSON-RPC error when there is none. */
  const find = async (taskId: string, extra: unknown): Promise<StoredTask> => {
    requireExtension(extra);
    const owner = settings.owner();
    let task = await settings.store.get(taskId, owner, now());
    if (task && !isTerminal(task.status) && task.leaseUntil.getTime() <= now().getTime()) {
      await settings.store.failLapsed(taskId, LAPSED, now());
      task = await settings.store.get(taskId, owner, now());
    }
    if (!task) throw rpcError(-32602, 'Failed to retrieve task: Task not found (it never existed for this caller, or it expired)');
    return task;
  };
  server.server.setRequestHandler('tasks/get', { params: TaskIdParams }, async (params, extra) => wireOf(await find(params.taskId, extra)) as never);
  // No task of ours asks for input (questions are put before the call becomes a task): responses are acknowledged and ignored.
  server.server.setRequestHandler('tasks/update', { params: TaskIdParams }, async (params, extra) => {
    await find(params.taskId, extra);
    return {} as never;
  });
  server.server.setRequestHandler('tasks/cancel', { params: TaskIdParams }, async (params, extra) => {
    requireExtension(extra);
    const task = await settings.store.requestCancel(params.taskId, settings.owner(), now());
    if (!task) throw rpcError(-32602, 'Failed to cancel task: Task not found (it never existed for this caller, or it expired)');
    return {} as never;
  });
}

/** The params of tasks/get, tasks/update and tasks/cancel. */
const TaskIdParams = z.looseObject({ taskId: z.string() });

/** A task whose node stopped renewing its lease (the process ended or lost the database). */
const LAPSED: Extract<TaskOutcome, { status: 'failed' }> = {
  status: 'failed',
  error: { code: -32603, message: 'The server running this task stopped before it finished; check what the tool had done before calling it again.' },
  statusMessage: 'The server running this task stopped before it finished.',
};

function outcomeOf(task: RunningTask, result: CallToolResult): TaskOutcome {
  // The work stopped at a step because of the cancellation: the task is cancelled, and says where it stopped.
  if (task.stoppedByCancel) return { status: 'cancelled', statusMessage: result.content?.find((c) => c.type === 'text')?.text ?? 'Cancelled by the client.' };
  // The tool's result as the 2026-07-28 wire carries any result (the Tasks extension's client checks it): with its resultType.
  return { status: 'completed', result: { ...result, resultType: 'complete' } };
}

function failureOf(error: unknown): TaskOutcome {
  const e = error as { code?: unknown; message?: unknown; data?: unknown };
  const rpc: TaskError = {
    code: typeof e?.code === 'number' ? e.code : -32603,
    message: typeof e?.message === 'string' ? e.message : String(error),
    ...(e?.data !== undefined ? { data: e.data } : {}),
  };
  return { status: 'failed', error: rpc, statusMessage: rpc.message };
}

/** A task as the wire carries it (the spec's DetailedTask). */
function wireOf(task: StoredTask): Record<string, unknown> {
  return {
    taskId: task.taskId,
    status: task.status,
    ...(task.statusMessage ? { statusMessage: task.statusMessage } : {}),
    createdAt: task.createdAt.toISOString(),
    lastUpdatedAt: task.lastUpdatedAt.toISOString(),
    ttlMs: task.ttlMs,
    ...(isTerminal(task.status) ? {} : { pollIntervalMs: TASK_POLL_INTERVAL_MS }),
    ...(task.status === 'completed' ? { result: task.result } : {}),
    ...(task.status === 'failed' ? { error: task.error } : {}),
  };
}

/** tasks/* from a request that did not advertise the extension: -32021, as the spec requires. */
function requireExtension(extra: unknown): void {
  if (!advertisesExtension(extra, TASKS_EXTENSION))
    throw rpcError(-32021, 'Missing required client capability', { requiredCapabilities: { extensions: TASKS_EXTENSION_CAPABILITY } });
}

/** An error the SDK's Protocol sends as the JSON-RPC error as it is (code, message, data). */
const rpcError = (code: number, message: string, data?: unknown) => Object.assign(new Error(message), { code, ...(data !== undefined ? { data } : {}) });
