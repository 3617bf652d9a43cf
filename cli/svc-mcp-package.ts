import fs from 'node:fs';
import { Readable } from 'node:stream';
import type { Hono } from 'hono';
import { packagePath } from '../service/kernel/package-root.js';
import { AppError } from '../service/kernel/app-error.js';
import type { AppEnv } from '../service/kernel/request-env.js';

/**
 * The svc-mcp package this service serves (bin/pack-svc-mcp.mjs builds it into dist/): a user of a
 * hosted svc runs the local MCP server, the one with a wallet and the tools that read their disk,
 * with `npx -y -p {base}/mcp/svc-mcp-<version>-<digest>.tgz svc-mcp` (`svcMcpCommand`), at the
 * version of the service it talks to and without the package being on the registry. The file's name
 * carries a digest of its bytes (npx keeps one install per package spec, so each build must be a new
 * spec) and it is cached as immutable; `/mcp/svc-mcp.tgz` redirects to the current one.
 */
export interface SvcMcpPackage {
  /** `svc-mcp-<version>-<digest>.tgz` */
  file: string;
  bytes: number;
  sha256: string;
}

/** The route that always names the current build. */
export const SVC_MCP_PACKAGE_PATH = '/mcp/svc-mcp.tgz';

/** The package dist/ holds (dist/svc-mcp.json), or null when the service runs unbuilt sources. */
export function builtSvcMcpPackage(): SvcMcpPackage | null {
  try {
    const meta = JSON.parse(fs.readFileSync(packagePath('dist', 'svc-mcp.json'), 'utf8')) as SvcMcpPackage;
    return fs.existsSync(packagePath('dist', meta.file)) ? meta : null;
  } catch {
    return null;
  }
}

/** The command that runs svc-mcp against the service at `baseUrl`: its own package when it serves one, else the registry's. */
export function svcMcpCommand(baseUrl: string, pkg: SvcMcpPackage | null): string {
  return pkg ? `SVC_URL=${baseUrl} npx -y -p ${baseUrl}/mcp/${pkg.file} svc-mcp` : `SVC_URL=${baseUrl} npx -y -p svc-agent-host svc-mcp`;
}

export function mountSvcMcpPackage(app: Hono<AppEnv>, pkg: SvcMcpPackage | null): void {
  app.get(SVC_MCP_PACKAGE_PATH, (c) => {
    if (!pkg) throw notBuilt();
    return c.redirect(`/mcp/${pkg.file}`, 302);
  });
  app.get('/mcp/:file{svc-mcp-.+\\.tgz}', (c) => {
    if (!pkg) throw notBuilt();
    if (c.req.param('file') !== pkg.file)
      throw new AppError('not_found', `${c.req.param('file')} is not this service's svc-mcp package: ${SVC_MCP_PACKAGE_PATH} names the current one`);
    const body = Readable.toWeb(fs.createReadStream(packagePath('dist', pkg.file))) as ReadableStream;
    return c.body(body, 200, {
      'content-type': 'application/gzip',
      'content-length': String(pkg.bytes),
      'cache-control': 'public, max-age=31536000, immutable',
      etag: `"${pkg.sha256}"`,
    });
  });
}

const notBuilt = () =>
  new AppError(
    'not_found',
    'this service runs from unbuilt sources, so it has no svc-mcp package to serve (npm run build makes one); from the registry: npx -y -p svc-agent-host svc-mcp',
  );
