import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { isProcessAlive, readAdminFile } from '../service/admin/admin-file.js';
import type { AdminOperationName } from '../service/admin/operations.js';
import type { Config } from '../service/config.js';
import { SCOPES, parseScopeList } from '../shared/scopes.js';

const USAGE = `svc: self-hostable site hosting for AI agents

Usage:
  svc-agent-host serve                                    start the service (same as npm start)
  svc-agent-host account create --email <email>           create an account
  svc-agent-host account password --email <email>         set the dashboard password (read from stdin); ends its sessions
  svc-agent-host key create --email <email> (--scopes a,b | --all-scopes) [--name <name>]
                                                          create a personal API key (shown once)
  svc-agent-host key list --email <email>                 list an account's keys
  svc-agent-host key revoke --email <email> --id <keyId>  revoke a key
  svc-agent-host function secret set --email <email> --function <id|slug> --name <NAME> [--value <v>]
                                                          set a Function secret (value read from stdin when
                                                          --value is omitted; never printed back)
  svc-agent-host function secret list --email <email> --function <id|slug>     list secret names
  svc-agent-host function secret delete --email <email> --function <id|slug> --name <NAME>
  svc-agent-host function access --email <email> --function <id|slug> (--enable | --disable)
                                                          let other accounts' personal keys invoke it (allowUserInvoke)
  svc-agent-host faucet <address> <usdc>                  dev chain only: mint test USDC to a wallet (service must run)
  svc-agent-host payments reconcile                       collect or release payments a crash or a refused settlement left
  svc-agent-host site put-file --site <siteId> --path <path> --file <local file> [--type <media type>]
                                                          add or replace one file of a site (operator)

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
  // Loaded only when the service is not running: the CLI then opens the database itself.
  const { createRuntime } = await import('./runtime.js');
  const runtime = await createRuntime(config);
  try {
    const { runAdminOperation } = await import('../service/admin/operations.js');
    return await runAdminOperation(runtime.deps, name, input);
  } finally {
    await runtime.close();
  }
}

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('secret value (end with Ctrl-D): ');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export async function main(argv: string[]): Promise<void> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
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
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [group, action, subAction] = positionals;
  if (values.help || !group) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  // After --help: the configuration (zod, the price catalogue) is loaded only for a real command.
  const { loadConfig } = await import('../service/config.js');
  const config = loadConfig();
  const need = (name: 'email' | 'id' | 'site' | 'path' | 'file'): string => {
    const v = values[name];
    if (!v) throw new CliError(`--${name} is required`);
    return v;
  };
  if (group === 'faucet') {
    const [, address, usdc] = positionals;
    if (!address || !usdc) throw new CliError('usage: svc-agent-host faucet <address> <usdc>');
    if (config.x402.mode !== 'dev')
      throw new CliError(`the faucet only works with the local dev chain (SVC_X402_MODE=dev); this configuration settles in "${config.x402.mode}" mode`);
    const admin = readAdminFile(config.dataDir);
    if (!admin || !isProcessAlive(admin.pid))
      throw new CliError(`the dev chain lives inside the running service: start it first (npm start) with the same SVC_DATA_DIR (${config.dataDir})`);
    return print(await runOperation(config, 'x402.faucet', { address, usdc }));
  }
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'payments reconcile':
      return print(await runOperation(config, 'x402.reconcile', {}));
    case 'serve':
      return (await import('./serve.js')).serveCommand(config);
    case 'account create':
      return print(await runOperation(config, 'account.create', { email: need('email') }));
    case 'account password':
      return print(await runOperation(config, 'account.password', { email: need('email'), password: (await readStdin()).replace(/\r?\n$/, '') }));
    case 'key create': {
      if (!values['all-scopes'] && !values.scopes) throw new CliError('give --scopes a,b,c or --all-scopes');
      let scopes: string[];
      try {
        scopes = values['all-scopes'] ? [...SCOPES] : parseScopeList(values.scopes!);
      } catch (e) {
        throw new CliError((e as Error).message);
      }
      const result = (await runOperation(config, 'key.create', { email: need('email'), scopes, name: values.name })) as { secret: string };
      print(result);
      process.stderr.write(`\nThis is the only time the key is shown. Store it now:\n${result.secret}\n`);
      return;
    }
    case 'key list':
      return print(await runOperation(config, 'key.list', { email: need('email') }));
    case 'key revoke':
      return print(await runOperation(config, 'key.revoke', { email: need('email'), keyId: need('id') }));
    case 'function secret': {
      const fn = values.function;
      if (!fn) throw new CliError('--function is required');
      if (subAction === 'list') return print(await runOperation(config, 'function.secret.list', { email: need('email'), function: fn }));
      if (!values.name) throw new CliError('--name is required');
      if (subAction === 'delete') return print(await runOperation(config, 'function.secret.delete', { email: need('email'), function: fn, name: values.name }));
      if (subAction !== 'set') throw new CliError('use: svc-agent-host function secret set|list|delete …');
      const value = values.value ?? (await readStdin()).replace(/\r?\n$/, '');
      return print(await runOperation(config, 'function.secret.set', { email: need('email'), function: fn, name: values.name, value }));
    }
    case 'function access': {
      if (!values.function) throw new CliError('--function is required');
      if (values.enable === values.disable) throw new CliError('give exactly one of --enable or --disable');
      return print(await runOperation(config, 'function.access', { email: need('email'), function: values.function, allowUserInvoke: Boolean(values.enable) }));
    }
    case 'site put-file': {
      const file = need('file');
      if (!fs.existsSync(file)) throw new CliError(`no such file: ${file}`);
      const contentBase64 = fs.readFileSync(file).toString('base64');
      return print(await runOperation(config, 'site.file.put', { siteId: need('site'), path: need('path'), contentBase64, contentType: values.type }));
    }
    default:
      throw new CliError(`unknown command "${positionals.join(' ')}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((e: unknown) => {
  const message = e instanceof Error ? e.message : String(e);
  process.stderr.write(`svc: ${message}\n`);
  process.exit(1);
});
