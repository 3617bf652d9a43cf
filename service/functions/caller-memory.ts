import { createHmac } from 'node:crypto';
import { and, count, eq, sql, sum } from 'drizzle-orm';
import { type Db, onlyRow } from '../db/client.js';
import { functionMemory } from '../db/schema/index.js';
import type { Deps } from '../deps.js';
import type { SandboxHost } from './sandbox.js';

/** Limits of SVC_MEMORY.caller, per (Function, calling account). */
export const CALLER_MEMORY_LIMITS = {
  maxKeyBytes: 256,
  maxValueBytes: 16 * 1024,
  maxTotalBytes: 64 * 1024,
  maxKeys: 256,
} as const;

/**
 * SVC_CALLER: who is calling, as this Function sees it. An HMAC of (function, account) under the
 * service secret: stable for one caller of one Function, different for every Function (two Functions
 * cannot correlate their callers), and impossible for the caller to choose or forge.
 */
export function callerIdentity(secret: string, functionId: string, accountId: string): string {
  const mac = createHmac('sha256', secret).update(`svc-function-caller\u0000${functionId}\u0000${accountId}`).digest('base64url');
  return `caller_${mac.slice(0, 32)}`;
}

/** Errors thrown here reach the guest as a rejected promise with this message. */
class MemoryLimitError extends Error {}

function assertKey(key: string): void {
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes === 0 || bytes > CALLER_MEMORY_LIMITS.maxKeyBytes) {
    throw new MemoryLimitError(`SVC_MEMORY.caller: keys are 1–${CALLER_MEMORY_LIMITS.maxKeyBytes} bytes`);
  }
}

/** The SVC_MEMORY.caller store of one (Function, account), persisted in Postgres. */
export function callerMemory(deps: Pick<Deps, 'db' | 'clock'>, functionId: string, accountId: string): SandboxHost {
  const db: Db = deps.db;
  const where = (key: string) => and(eq(functionMemory.functionId, functionId), eq(functionMemory.accountId, accountId), eq(functionMemory.key, key));
  return {
    async memoryGet(key) {
      assertKey(key);
      const [row] = await db.select({ value: functionMemory.value }).from(functionMemory).where(where(key));
      return row?.value ?? null;
    },
    async memorySet(key, valueJson) {
      assertKey(key);
      const valueBytes = Buffer.byteLength(valueJson, 'utf8');
      if (valueBytes > CALLER_MEMORY_LIMITS.maxValueBytes) {
        throw new MemoryLimitError(`SVC_MEMORY.caller.set: the value is ${valueBytes} bytes as JSON; the limit is ${CALLER_MEMORY_LIMITS.maxValueBytes}`);
      }
      const bytes = valueBytes + Buffer.byteLength(key, 'utf8');
      await db.transaction(async (tx) => {
        // One writer per (function, caller) at a time, so the total check below cannot be raced.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`svc-fn-mem:${functionId}:${accountId}`}))`);
        const now = deps.clock.now();
        await tx
          .insert(functionMemory)
          .values({ functionId, accountId, key, value: valueJson, bytes, updatedAt: now })
          .onConflictDoUpdate({
            target: [functionMemory.functionId, functionMemory.accountId, functionMemory.key],
            set: { value: valueJson, bytes, updatedAt: now },
          });
        const t = onlyRow(
          await tx
            .select({ keys: count(), bytes: sum(functionMemory.bytes) })
            .from(functionMemory)
            .where(and(eq(functionMemory.functionId, functionId), eq(functionMemory.accountId, accountId))),
          'sum the caller memory',
        );
        if (Number(t.keys) > CALLER_MEMORY_LIMITS.maxKeys) {
          throw new MemoryLimitError(`SVC_MEMORY.caller.set: at most ${CALLER_MEMORY_LIMITS.maxKeys} keys per caller`);
        }
        if (Number(t.bytes ?? 0) > CALLER_MEMORY_LIMITS.maxTotalBytes) {
          throw new MemoryLimitError(`SVC_MEMORY.caller.set: this caller's memory would exceed ${CALLER_MEMORY_LIMITS.maxTotalBytes} bytes`);
        }
      });
    },
    async memoryDelete(key) {
      assertKey(key);
      const gone = await db.delete(functionMemory).where(where(key)).returning({ key: functionMemory.key });
      return gone.length > 0;
    },
  };
}
