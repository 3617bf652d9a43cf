import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { readAdminFile } from '../service/admin/admin-file.js';
import { isProcessAlive } from '../shared/process-alive.js';
import type { AdminOperationName } from '../service/admin/operations.js';
import type { Config } from '../service/kernel/config.js';
import { SCOPES, parseScopeList } from '../shared/scopes.js';
import { CLI_COMMAND, svcCommand } from '../service/kernel/cli-command.js';

// Written with the command that works here (npm run svc -- in a clone, svc-agent-host when installed).
const CLI = CLI_COMMAND;
const USAGE = `svc: self-hostable site hosting for AI agents

Usage (${CLI_COMMAND === 'npm run svc --' ? 'in this clone' : 'installed'}):
  ${CLI} serve                                    start the service (same as npm start)
  ${CLI} mcp [svc-mcp's arguments]                svc-mcp, the MCP server (stdio; --help for its own)
  ${CLI} account create --email <email>           create an account
  ${CLI} account password --email <email>         set the dashboard password (read from stdin); ends its sessions
  ${CLI} account versions --email <email> [--keep-last <n>] [--keep-days <d>] [--reset]
                                                          show or set how many site versions the account keeps
                                                          (its own over SVC_VERSIONS_KEEP_LAST/_DAYS; --reset drops it)
  ${CLI} key create --email <email> (--scopes a,b | --all-scopes) [--name <name>]
                                                          create a personal API key (shown once)
  ${CLI} key list --email <email>                 list an account's keys
  ${CLI} key revoke --email <email> --id <keyId>  revoke a key
  ${CLI} function secret set --email <email> --function <id|slug> --name <NAME> [--value <v>]
                                                          set a Function secret (value read from stdin when
                                                          --value is omitted; never printed back)
  ${CLI} function secret list --email <email> --function <id|slug>     list secret names
  ${CLI} function secret delete --email <email> --function <id|slug> --name <NAME>
  ${CLI} function access --email <email> --function <id|slug> (--enable | --disable)
                                                          let other accounts' personal keys invoke it (allowUserInvoke)
  ${CLI} faucet <address> <usdc>                  dev chain only: mint test USDC to a wallet (service must run)
  ${CLI} payments reconcile                       collect or release payments a crash or a refused settlement left
  ${CLI} abuse list [--site <id|slug>] [--limit <n>]
                                                          reports the public sent through /abuse, newest first
  ${CLI} recount                                  recompute the kept usage counts (records, files, bytes, sites,
                                                          tables) from the data; prints any that were wrong
  ${CLI} site put-file --site <siteId> --path <path> --file <local file> [--type <media type>]
                                                          add or replace one file of a site (operator)

Takedowns (nothing is deleted; each act is recorded with who, when and why; --by names who acts,
default <user>@<host>):
  ${CLI} site suspend --site <id|name> --reason "…"     the site answers 451 on both addresses, its
                                                          Table API too; its owner sees the reason
  ${CLI} site restore --site <id|name> --reason "…"     serve it again, as it was
  ${CLI} account suspend --email <email> --reason "…"   refuse its keys, OAuth tokens and dashboard
                                                          sessions (403 with the reason); suspend its sites
  ${CLI} account restore --email <email> --reason "…"
  ${CLI} wallet block <address> --reason "…"      refuse its Agent API calls before any payment is
                                                          verified or settled; suspend its apps
  ${CLI} wallet unblock <address> --reason "…"
  ${CLI} audit list [--target <site id|email|address>] [--limit N] [--before <ISO time>]
                                                          the record of these acts, newest first

Per-account limits (without a value: shows them; "default" puts one back to the configuration's):
  ${CLI} account limits --email <email> [--sites N] [--storage-mb N] [--files-per-site N]
      [--file-mb N] [--functions N] [--invocations-per-month N] [--tables-per-site N] [--reason "…"]

Configuration comes from the environment (SVC_DATA_DIR, DATABASE_URL, …; see README). While the
service runs, the CLI goes through its loopback admin endpoint; otherwise it opens the database.
Scopes: ${SCOPES.join(', ')}`;

class CliError extends Error {}

/** Runs an admin operation through the running service if there is one, else in-process. */
async function runOperation(config: Config, name: AdminOperationName, input: unknown): Promise<unknown> {
  const admin = readAdminFile(config.dataDir);
  if (admin && isProcessAlive(admin.pid)) {
    let res: Response;
    try {
      res = await fetch(`${admin.url}/_admin/${name}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-svc-admin-token': admin.token },
        body: JSON.stringify(input),
      });
    } catch (e) {
      throw new CliError(`the service (pid ${admin.pid}) holds ${config.dataDir} but does not answer at ${admin.url}: ${(e as Error).message}`);
    }
    const body = (await res.json()) as { ok: boolean; result?: unknown; error?: { message: string } };
    if (!body.ok) throw new CliError(body.error?.message ?? `service answered ${res.status}`);
    return body.result;
  }
  await checkDataFolder(config);
  // Loaded only when the service is not running: the CLI then opens the database itself, holding the
  // data folder's lock meanwhile (a `svc serve` started in between waits for nothing and refuses).
  const { lockDataDir, StartRefused } = await import('./data-dir-lock.js');
  let lock: { release(): void };
  try {
    lock = lockDataDir(config.dataDir, config.baseUrl, config.port, 'cli');
  } catch (e) {
    if (e instanceof StartRefused) throw new CliError(e.message.replace('Nothing was started', 'Nothing was done'));
    throw e;
  }
  const { createRuntime } = await import('./runtime.js');
  const runtime = await createRuntime(config);
  try {
    const { runAdminOperation } = await import('../service/admin/operations.js');
    const result = await runAdminOperation(runtime.deps, name, input);
    // No node may be running to purge what the operation changed: purge it here (the outbox keeps what fails).
    await runtime.deps.purges.drainWithin(10_000);
    return result;
  } finally {
    await runtime.close();
    lock.release();
  }
}

/**
 * Before the CLI opens a data folder itself (no service holds it): one that does not exist is refused
 * rather than created with a new database (a CLI run without the service's SVC_DATA_DIR used to make
 * `./.svc` and an account there, whose key the running service then called invalid); a service that
 * answers on the configured port while not holding this folder is named, since its data is elsewhere.
 */
async function checkDataFolder(config: Config): Promise<void> {
  if (config.databaseUrl) return;
  const elsewhere = await serviceOnPort(config.port);
  const there = elsewhere ? ` A service answers at ${elsewhere}, but it keeps its data in another folder: run this command with its SVC_DATA_DIR.` : '';
  if (!fs.existsSync(config.dataDir)) {
    throw new CliError(
      `no data folder at ${config.dataDir} (SVC_DATA_DIR, default ./.svc of the current folder): no service has used it, and nothing was done.${there} ` +
        `To start a service there: ${svcCommand('serve')}.`,
    );
  }
  if (elsewhere) {
    process.stderr.write(
      `svc: note: the service at ${elsewhere} does not hold ${config.dataDir}: this command works on that folder's own database, not on that service's. To act on the service's data, run it with the service's SVC_DATA_DIR.\n`,
    );
  }
}

/** The loopback URL of a service answering /readyz on `port`, if one does (none for port 0). */
async function serviceOnPort(port: number): Promise<string | undefined> {
  if (!port) return undefined;
  const url = `http://127.0.0.1:${port}`;
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
    await res.body?.cancel();
    return res.status === 200 ? url : undefined;
  } catch {
    return undefined;
  }
}

/** A secret read from stdin (never from the command line, where it would be seen), without its one trailing newline. */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('secret value (end with Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

const OPTIONS = {
  email: { type: 'string' },
  scopes: { type: 'string' },
  'all-scopes': { type: 'boolean' },
  name: { type: 'string' },
  id: { type: 'string' },
  function: { type: 'string' },
  value: { type: 'string' },
  enable: { type: 'boolean' },
  disable: { type: 'boolean' },
  site: { type: 'string' },
  path: { type: 'string' },
  file: { type: 'string' },
  type: { type: 'string' },
  reason: { type: 'string' },
  by: { type: 'string' },
  target: { type: 'string' },
  limit: { type: 'string' },
  before: { type: 'string' },
  sites: { type: 'string' },
  'storage-mb': { type: 'string' },
  'files-per-site': { type: 'string' },
  'file-mb': { type: 'string' },
  functions: { type: 'string' },
  'invocations-per-month': { type: 'string' },
  'tables-per-site': { type: 'string' },
  'keep-last': { type: 'string' },
  'keep-days': { type: 'string' },
  reset: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** One command line, parsed, with the configuration loaded. */
interface Invocation {
  config: Config;
  positionals: string[];
  values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];
  /** The value of a required option; a CliError naming it when missing. */
  need(name: 'email' | 'id' | 'site' | 'path' | 'file' | 'function' | 'name' | 'reason'): string;
}

/** Every command, by its first two words (faucet and recount by their first: what follows is arguments). */
const COMMANDS: Record<string, (i: Invocation) => Promise<unknown>> = {
  serve: async (i) => (await import('./serve.js')).serveCommand(i.config),
  faucet: async (i) => print(await faucet(i)),
  recount: async (i) => print(await runOperation(i.config, 'counters.recount', {})),
  'payments reconcile': async (i) => print(await runOperation(i.config, 'x402.reconcile', {})),
  'account create': async (i) => print(await runOperation(i.config, 'account.create', { email: i.need('email') })),
  'account password': async (i) => print(await runOperation(i.config, 'account.password', { email: i.need('email'), password: await readStdin() })),
  'account versions': async (i) => {
    const n = (name: 'keep-last' | 'keep-days') => {
      const v = i.values[name];
      if (v === undefined) return undefined;
      if (!/^\d+$/.test(v)) throw new CliError(`--${name} is a whole number, not "${v}"`);
      return Number(v);
    };
    return print(
      await runOperation(i.config, 'account.versions', {
        email: i.need('email'),
        keepLast: n('keep-last'),
        keepDays: n('keep-days'),
        reset: Boolean(i.values.reset),
      }),
    );
  },
  'key create': createKey,
  'key list': async (i) => print(await runOperation(i.config, 'key.list', { email: i.need('email') })),
  'key revoke': async (i) => print(await runOperation(i.config, 'key.revoke', { email: i.need('email'), keyId: i.need('id') })),
  'function secret': async (i) => print(await functionSecret(i)),
  'function access': async (i) => {
    const fn = i.need('function');
    if (i.values.enable === i.values.disable) throw new CliError('give exactly one of --enable or --disable');
    return print(await runOperation(i.config, 'function.access', { email: i.need('email'), function: fn, allowUserInvoke: Boolean(i.values.enable) }));
  },
  'abuse list': async (i) => {
    const limit = i.values.limit === undefined ? undefined : Number(i.values.limit);
    if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 10_000)) throw new CliError('--limit is a whole number from 1 to 10000');
    return print(await runOperation(i.config, 'abuse.list', { limit, site: i.values.site }));
  },
  'site put-file': async (i) => {
    const file = i.need('file');
    if (!fs.existsSync(file)) throw new CliError(`no such file: ${file}`);
    const contentBase64 = fs.readFileSync(file).toString('base64');
    return print(await runOperation(i.config, 'site.file.put', { siteId: i.need('site'), path: i.need('path'), contentBase64, contentType: i.values.type }));
  },
  'site suspend': async (i) => print(await runOperation(i.config, 'site.suspend', { site: i.need('site'), reason: i.need('reason'), actor: actorOf(i) })),
  'site restore': async (i) => print(await runOperation(i.config, 'site.restore', { site: i.need('site'), reason: i.need('reason'), actor: actorOf(i) })),
  'account suspend': async (i) =>
    print(await runOperation(i.config, 'account.suspend', { email: i.need('email'), reason: i.need('reason'), actor: actorOf(i) })),
  'account restore': async (i) =>
    print(await runOperation(i.config, 'account.restore', { email: i.need('email'), reason: i.need('reason'), actor: actorOf(i) })),
  'account limits': accountLimits,
  'wallet block': async (i) => print(await runOperation(i.config, 'wallet.block', { address: walletArgument(i), reason: i.need('reason'), actor: actorOf(i) })),
  'wallet unblock': async (i) =>
    print(await runOperation(i.config, 'wallet.unblock', { address: walletArgument(i), reason: i.need('reason'), actor: actorOf(i) })),
  'audit list': async (i) => {
    const limit = i.values.limit === undefined ? undefined : wholeNumber('limit', i.values.limit);
    return print(await runOperation(i.config, 'audit.list', { limit, target: i.values.target, before: i.values.before }));
  },
};

/** Who acts, for the audit record: --by, else the operator's user and host. */
function actorOf(i: Invocation): string {
  if (i.values.by !== undefined) return i.values.by;
  let user = 'unknown';
  try {
    user = os.userInfo().username;
  } catch {}
  return `${user}@${os.hostname()} (cli)`;
}

function walletArgument(i: Invocation): string {
  const address = i.positionals[2];
  if (!address) throw new CliError(`usage: ${CLI} wallet ${i.positionals[1]} <address> --reason "…"`);
  return address;
}

function wholeNumber(option: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new CliError(`--${option} must be a whole number (got ${JSON.stringify(value)})`);
  return Number(value.trim());
}

/** The quota options of `account limits`: the option, the quota it sets, and the unit it is given in. */
const LIMIT_OPTIONS = [
  ['sites', 'sites', 1],
  ['storage-mb', 'storageBytes', 1024 * 1024],
  ['files-per-site', 'filesPerSite', 1],
  ['file-mb', 'fileBytes', 1024 * 1024],
  ['functions', 'functions', 1],
  ['invocations-per-month', 'invocationsPerMonth', 1],
  ['tables-per-site', 'tablesPerSite', 1],
] as const;

async function accountLimits(i: Invocation): Promise<void> {
  const email = i.need('email');
  const set: Record<string, number | null> = {};
  for (const [option, quota, unit] of LIMIT_OPTIONS) {
    const value = i.values[option];
    if (value === undefined) continue;
    set[quota] = value.trim() === 'default' ? null : wholeNumber(option, value) * unit;
  }
  print(await runOperation(i.config, 'account.limits', { email, set, reason: i.values.reason, actor: actorOf(i) }));
}

async function faucet({ config, positionals }: Invocation): Promise<unknown> {
  const [, address, usdc] = positionals;
  if (!address || !usdc) throw new CliError(`usage: ${svcCommand('faucet <address> <usdc>')}`);
  if (config.x402.mode !== 'dev')
    throw new CliError(`the faucet only works with the local dev chain (SVC_X402_MODE=dev); this configuration settles in "${config.x402.mode}" mode`);
  const admin = readAdminFile(config.dataDir);
  if (!admin || !isProcessAlive(admin.pid))
    throw new CliError(
      `the dev chain lives inside the running service: start it first (npm start, or ${svcCommand('serve')}) with the same SVC_DATA_DIR (${config.dataDir})`,
    );
  return runOperation(config, 'x402.faucet', { address, usdc });
}

async function createKey(i: Invocation): Promise<void> {
  const email = i.need('email');
  if (!i.values['all-scopes'] && !i.values.scopes) throw new CliError('give --scopes a,b,c or --all-scopes');
  let scopes: string[];
  try {
    scopes = i.values['all-scopes'] ? [...SCOPES] : parseScopeList(i.values.scopes!);
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const result = (await runOperation(i.config, 'key.create', { email, scopes, name: i.values.name })) as { secret: string };
  print(result);
  process.stderr.write(`\nThis is the only time the key is shown. Store it now:\n${result.secret}\n`);
}

async function functionSecret(i: Invocation): Promise<unknown> {
  const fn = i.need('function');
  const subAction = i.positionals[2];
  if (subAction === 'list') return runOperation(i.config, 'function.secret.list', { email: i.need('email'), function: fn });
  const name = i.need('name');
  if (subAction === 'delete') return runOperation(i.config, 'function.secret.delete', { email: i.need('email'), function: fn, name });
  if (subAction !== 'set') throw new CliError(`use: ${svcCommand('function secret set|list|delete …')}`);
  return runOperation(i.config, 'function.secret.set', { email: i.need('email'), function: fn, name, value: i.values.value ?? (await readStdin()) });
}

export async function main(argv: string[]): Promise<void> {
  if (argv[0] === 'mcp') return runSvcMcp();
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [group, action] = positionals;
  if (values.help || !group) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const command = COMMANDS[group === 'faucet' || group === 'recount' ? group : `${group} ${action ?? ''}`.trim()];
  if (!command) throw new CliError(`unknown command "${positionals.join(' ')}"\n\n${USAGE}`);
  // After --help: the configuration (zod, the price catalogue) is loaded only for a real command.
  const { loadConfig } = await import('../service/config.js');
  const config = loadConfig();
  const need: Invocation['need'] = (name) => {
    const v = values[name];
    if (!v) throw new CliError(`--${name} is required`);
    return v;
  };
  await command({ config, positionals, values, need });
}

/**
 * `svc-agent-host mcp`: the package's MCP server, svc-mcp, as a command of the package's own bin.
 * `npx svc-agent-host@<version> mcp` is how the MCP Registry's npm entry (server.json) starts it: a
 * registry client runs a package's default bin. svc-mcp reads its arguments from process.argv, so
 * `mcp` is taken out before its bin (which picks the bundle or the sources) is loaded.
 */
async function runSvcMcp(): Promise<void> {
  process.argv.splice(2, 1);
  const [{ packagePath }, { pathToFileURL }] = await Promise.all([import('../service/kernel/package-root.js'), import('node:url')]);
  await import(pathToFileURL(packagePath('bin', 'svc-mcp.mjs')).href);
}

main(process.argv.slice(2)).catch((e: unknown) => {
  const message = e instanceof Error ? e.message : String(e);
  process.stderr.write(`svc: ${message}\n`);
  process.exit(1);
});
