import fs from 'node:fs';
import type { Config } from '../service/kernel/config.js';
import { svcCommand } from '../service/kernel/cli-command.js';
import { ensurePortFree, lockDataDir } from './data-dir-lock.js';
import { mountHostedMcp } from './hosted-mcp.js';
import { outliveLostLogStream, surviveKnownDriverFaults } from './process-faults.js';
import { builtSvcMcpPackage, svcMcpCommand } from './svc-mcp-package.js';
import { startService } from './server.js';

/** The MCP server over streamable HTTP beside the service; a failure to start it is reported, not fatal. */
async function startMcpBeside(config: Config, serviceUrl: string): Promise<{ line: string; close(): Promise<void> }> {
  if (config.mcpPort === null) return { line: 'off (SVC_MCP_PORT=off); stdio clients run svc-mcp', close: async () => {} };
  try {
    const { startEmbeddedMcp } = await import('./embedded-mcp.js');
    const mcp = await startEmbeddedMcp(process.env, serviceUrl, config.mcpPort);
    return { line: `${mcp.url} (streamable HTTP, loopback; ${mcp.wallet}); stdio clients run svc-mcp`, close: mcp.close };
  } catch (e) {
    return { line: `not started: ${(e as Error).message.split('\n')[0]}`, close: async () => {} };
  }
}

/** The signals that stop the service (SIGHUP: the terminal closed, or `kill -HUP` to npm's process). */
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** How often the service checks that whoever started it (npm start's process) is still there. */
const PARENT_CHECK_MS = 1000;

/**
 * npm runs a script through a shell (`sh -c "node ./bin/svc.mjs serve"`) that does not exec: npm is
 * the shell's parent. Killed outright, npm leaves the shell waiting, so the shell's parent is watched
 * too. Where /proc does not tell, only the direct parent is watched.
 */
function npmProcessAbove(parent: number): number | undefined {
  try {
    const comm = fs.readFileSync(`/proc/${parent}/comm`, 'utf8').trim();
    if (!/^(sh|dash|bash|zsh|ash)$/.test(comm)) return undefined;
    const stat = fs.readFileSync(`/proc/${parent}/stat`, 'utf8');
    const grandparent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return grandparent > 1 ? grandparent : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return true;
  }
}

export async function serveCommand(config: Config): Promise<void> {
  const started = Date.now();
  // Whoever started this process, read before anything else: npm can be gone by the time the
  // service is up (a signal sent on seeing the banner), and a parent read then is already init's.
  const parent = process.ppid;
  // Before anything starts: one service per data folder, and a taken port refused before the
  // database and the dev chain start (a second start used to stop the first one's dev chain).
  const lock = lockDataDir(config.dataDir, config.baseUrl, config.port);
  await ensurePortFree(config.port, config.host, config.baseUrl);
  // Signals are taken from here on: one that comes while the service starts stops it once started
  // (dying of it then would leave the dev chain running).
  let running: { stop(): Promise<void> } | undefined;
  let startedOnce: () => void = () => {};
  const startedUp = new Promise<void>((resolve) => (startedOnce = resolve));
  let stopping = false;
  const shutdown = async (why: string) => {
    if (stopping) {
      // A second signal: stop at once (the exit hooks still stop the dev chain and free the folder).
      process.stderr.write(`\n${why} again: stopping at once\n`);
      process.exit(1);
    }
    stopping = true;
    process.stderr.write(`\n${why}: stopping svc…\n`);
    await startedUp;
    await running?.stop();
    lock.release();
    process.exit(0);
  };
  for (const signal of STOP_SIGNALS) process.on(signal, () => void shutdown(signal));
  outliveLostLogStream();
  // The hosted MCP endpoint {base}/mcp, for remote agents that sign in (docs/mcp.md), and the svc-mcp
  // package it names (read once: the banner names it too).
  const svcMcp = builtSvcMcpPackage();
  const service = await startService(config, { mount: (app, runtime) => mountHostedMcp(app, runtime.deps, svcMcp) });
  const { deps } = service.runtime;
  surviveKnownDriverFaults(deps.log);
  const mcp = await startMcpBeside(config, config.port === 0 ? service.url : config.baseUrl);
  const db = service.runtime.database.kind === 'pglite' ? `PGlite in ${config.dataDir}/db` : 'PostgreSQL (DATABASE_URL)';
  const blobs =
    deps.blobs.kind === 's3'
      ? `S3 bucket ${config.s3?.bucket}`
      : `local folder ${config.dataDir}/blobs${config.databaseUrl ? '  ⚠ only this node sees these files: set S3_BUCKET before a second node joins this database' : ''}`;
  process.stderr.write(
    [
      ``,
      `svc is running at ${config.baseUrl}  (listening on ${service.url}, ready in ${Date.now() - started} ms)`,
      `  database: ${db}`,
      `  blobs:    ${blobs}`,
      `  payments: ${service.payments}`,
      `  MCP:      ${mcp.line}`,
      `  hosted:   ${config.baseUrl}/mcp (remote MCP clients sign in with OAuth or a personal key and act as their account; ?toolsets=default,apps adds the tools their own wallet pays)`,
      `            ${config.baseUrl}/mcp/x402 (no sign-in: the caller's wallet pays and owns what it creates)`,
      `  svc-mcp:  ${svcMcpCommand(config.baseUrl, svcMcp)}`,
      `            (the local MCP server with a wallet and spend caps, for this service: what users of the hosted endpoint run for deploy_site/upload_dataset)`,
      ``,
      `Next steps (README.md, "Five minutes"):`,
      `  ${svcCommand('account create --email you@example.com')}`,
      `  ${svcCommand('key create --email you@example.com --all-scopes')}      # prints svc_pat_… once`,
      `  curl -X POST ${config.baseUrl}/api/v1/sites -H "Authorization: Bearer svc_pat_…" -H "content-type: application/json" -d "{\\"requestId\\":\\"first\\",\\"slug\\":\\"hello\\",\\"html\\":\\"<h1>Hello</h1>\\"}"`,
      `  then open ${config.baseUrl}/s/hello/`,
      `  API discovery: ${config.baseUrl}/api/v1   OpenAPI: ${config.baseUrl}/api/v1/openapi.json`,
      ``,
    ].join('\n'),
  );
  running = {
    async stop() {
      await mcp.close();
      await service.stop();
    },
  };
  startedOnce();
  // `npm start` is npm → (sh →) node: a signal npm does not pass on, or npm killed outright, leaves
  // this process with a new parent. Stop then too, so no orphan keeps the ports. Only under npm: a
  // service started by other means (a service manager, `node bin/svc.mjs serve &`) keeps running.
  if (process.env.npm_lifecycle_event) {
    const npm = npmProcessAbove(parent);
    const watch = setInterval(() => {
      if (process.ppid !== parent || (npm !== undefined && !isRunning(npm))) void shutdown('npm start is gone');
    }, PARENT_CHECK_MS);
    watch.unref();
  }
}
