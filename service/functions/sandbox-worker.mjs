// Worker-thread entry of the Function sandbox pool. Plain JS so it loads in any host (tsx CLI, vitest,
// node): it imports the TypeScript worker body through tsx's scoped loader.
import { parentPort } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

const { serveSandboxWorker } = await tsImport('./sandbox-worker.ts', import.meta.url);
serveSandboxWorker(parentPort);
