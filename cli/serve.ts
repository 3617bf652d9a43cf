import type { Config } from '../service/config.js';
import { mountHostedMcp } from './hosted-mcp.js';
import { surviveKnownDriverFaults } from './process-faults.js';
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

export async function serveCommand(config: Config): Promise<void> {
  const started = Date.now();
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
      `Next steps:`,
      `  npx svc-agent-host account create --email you@example.com`,
      `  npx svc-agent-host key create --email you@example.com --all-scopes`,
      `  curl -H "Authorization: Bearer svc_pat_…" ${config.baseUrl}/api/v1/sites`,
      `  API discovery: ${config.baseUrl}/api/v1   OpenAPI: ${config.baseUrl}/api/v1/openapi.json`,
      ``,
    ].join('\n'),
  );
  const shutdown = async (signal: string) => {
    process.stderr.write(`\n${signal}: stopping svc…\n`);
    await mcp.close();
    await service.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
}
