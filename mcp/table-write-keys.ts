import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomically } from '../wallet/atomic-file.js';
import { withFileLock } from '../wallet/file-lock.js';

/**
 * The write keys of Tables this server's wallet created: `create_table_api` answers the key once, and
 * the table tools then use it when the call names none, so an agent that creates a Table and fills it
 * never has to carry the secret from one call to the next, nor from one session to the next. Local
 * servers only (svc-mcp, the loopback endpoint of `svc serve`): the hosted endpoint serves many
 * callers, keeps nothing between requests, and its signed-in callers' own key opens their Tables.
 *
 * Kept in memory and in a file (`SVC_TABLE_KEYS_FILE`, by default `table-write-keys.json` beside the
 * spend ledger, mode 0600 in a 0700 folder, as the ledger), by service origin, so a restarted server
 * (a new conversation, another MCP client of the same user) still writes to the Tables its wallet made.
 * The file is only a convenience: when it cannot be read or written the key stays in memory, and no
 * tool call fails for it (the Table was made and paid for).
 */
export class TableWriteKeys {
  readonly #memory = new Map<string, string>();
  #warned = false;

  /** `file`: null keeps keys in memory only (SVC_TABLE_KEYS_FILE=off). */
  constructor(
    readonly file: string | null,
    private readonly origin: string,
    private readonly warn: (message: string) => void = (m) => process.stderr.write(`svc-mcp: ${m}\n`),
  ) {}

  /** The key learnt for a Table, in this process or (written by any server of this user) in the file. */
  get(appName: string, table: string): string | undefined {
    const key = keyOf(appName, table);
    const known = this.#memory.get(key) ?? this.#read()?.[this.origin]?.[key];
    if (known) this.#memory.set(key, known);
    return known;
  }

  async remember(appName: string, table: string, writeKey: string): Promise<void> {
    const key = keyOf(appName, table);
    this.#memory.set(key, writeKey);
    await this.#change(key, writeKey, 'keep');
  }

  /** Drops a key the Table no longer takes, here and in the file. */
  async forget(appName: string, table: string): Promise<void> {
    const key = keyOf(appName, table);
    this.#memory.delete(key);
    await this.#change(key, undefined, 'forget');
  }

  /** Sets (or, `undefined`, removes) one key in the file, under its lock; a failure is said once, never thrown. */
  async #change(key: string, writeKey: string | undefined, what: 'keep' | 'forget'): Promise<void> {
    const file = this.file;
    if (!file) return;
    try {
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      await withFileLock(file, () => {
        const all = this.#read();
        if (all === null) return; // unreadable: left as it is, the key kept in memory
        const { [key]: _old, ...others } = all[this.origin] ?? {};
        all[this.origin] = writeKey === undefined ? others : { ...others, [key]: writeKey };
        writeFileAtomically(file, JSON.stringify({ version: 1, keys: all }, null, 1));
      });
    } catch (e) {
      const why = (e as Error).message;
      this.#warnOnce(
        what === 'keep'
          ? `could not keep the write key of ${key} in ${file} (${why}); this server knows it until it stops`
          : `could not remove the write key of ${key} from ${file} (${why})`,
      );
    }
  }

  /** The file's keys by origin; {} when there is no file yet, null when it cannot be read. */
  #read(): Record<string, Record<string, string>> | null {
    if (!this.file) return {};
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      this.#warnOnce(`cannot read ${this.file}: ${(e as Error).message}`);
      return null;
    }
    try {
      const parsed = JSON.parse(text) as { version?: unknown; keys?: unknown };
      if (parsed.version === 1 && typeof parsed.keys === 'object' && parsed.keys !== null) return parsed.keys as Record<string, Record<string, string>>;
    } catch {
      // reported below
    }
    this.#warnOnce(`${this.file} is not a table write key file; it is left as it is (move it aside to keep keys again)`);
    return null;
  }

  #warnOnce(message: string): void {
    if (this.#warned) return;
    this.#warned = true;
    this.warn(message);
  }
}

const keyOf = (appName: string, table: string) => `${appName.toLowerCase()}/${table.toLowerCase()}`;

/** The app and Table a Table API address names (`…/api/data/<appName>/<table>`): what the table tools take. */
export function tableAddress(url: string): { appName: string; table: string } | null {
  const m = /\/api\/data\/([^/?#]+)\/([^/?#]+)/.exec(url);
  return m ? { appName: decodeURIComponent(m[1]!), table: decodeURIComponent(m[2]!) } : null;
}

/** What these functions need of a server's context (mcp/context.ts): whether it is hosted, and its keys. */
interface KeysContext {
  hosted?: unknown;
  tableWriteKeys: TableWriteKeys;
}

/** Learns the write key from an Agent API answer that holds a new Table (`table.writeKey`, `table.pathUrl`). */
export async function rememberTableWriteKey(ctx: KeysContext, answer: Record<string, unknown>): Promise<void> {
  if (ctx.hosted) return;
  const table = answer.table as { writeKey?: unknown; pathUrl?: unknown } | undefined;
  if (typeof table?.writeKey !== 'string' || typeof table.pathUrl !== 'string') return;
  const at = tableAddress(table.pathUrl);
  if (at) await ctx.tableWriteKeys.remember(at.appName, at.table, table.writeKey);
}

/** Forgets a learnt key the service refused (local servers). */
export async function forgetTableWriteKey(ctx: KeysContext, appName: string, table: string): Promise<void> {
  if (!ctx.hosted) await ctx.tableWriteKeys.forget(appName, table);
}

/** The write key this server learned for a Table, if any. */
export function knownTableWriteKey(ctx: KeysContext, appName: string, table: string): string | undefined {
  return ctx.hosted ? undefined : ctx.tableWriteKeys.get(appName, table);
}
