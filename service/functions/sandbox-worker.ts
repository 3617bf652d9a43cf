import type { MessagePort } from 'node:worker_threads';
import { runInSandbox, warmSandbox, type SandboxHost, type SandboxInput, type SandboxLimits, type SandboxOutcome } from './sandbox.js';

/** Messages between the pool (main thread) and a sandbox worker. Everything is structured-cloned. */
export type ToWorker =
  | { type: 'run'; id: number; input: SandboxInput; limits: SandboxLimits }
  | { type: 'host-result'; id: number; callId: number; ok: true; value: string | boolean | null | undefined }
  | { type: 'host-result'; id: number; callId: number; ok: false; message: string };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'host'; id: number; callId: number; op: 'get' | 'set' | 'delete'; key: string; valueJson?: string }
  | { type: 'done'; id: number; outcome: SandboxOutcome };

/** Runs invocations sent by the pool; SVC_MEMORY calls go back to the main thread, which owns the database. */
export function serveSandboxWorker(port: MessagePort | null): void {
  if (!port) throw new Error('sandbox worker started outside a worker thread');
  let nextCall = 0;
  const waiting = new Map<number, { resolve: (v: string | boolean | null | undefined) => void; reject: (e: Error) => void }>();
  const ask = (id: number, op: 'get' | 'set' | 'delete', key: string, valueJson?: string) =>
    new Promise<string | boolean | null | undefined>((resolve, reject) => {
      const callId = ++nextCall;
      waiting.set(callId, { resolve, reject });
      port.postMessage({ type: 'host', id, callId, op, key, valueJson } satisfies FromWorker);
    });
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'host-result') {
      const w = waiting.get(msg.callId);
      if (!w) return;
      waiting.delete(msg.callId);
      if (msg.ok) w.resolve(msg.value);
      else w.reject(new Error(msg.message));
      return;
    }
    const { id, input, limits } = msg;
    const host: SandboxHost = {
      memoryGet: async (key) => (await ask(id, 'get', key)) as string | null,
      memorySet: async (key, valueJson) => void (await ask(id, 'set', key, valueJson)),
      memoryDelete: async (key) => Boolean(await ask(id, 'delete', key)),
    };
    void runInSandbox(input, host, limits).then((outcome) => port.postMessage({ type: 'done', id, outcome } satisfies FromWorker));
  });
  void warmSandbox().then(() => port.postMessage({ type: 'ready' } satisfies FromWorker));
}
