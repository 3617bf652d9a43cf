// The svc-mcp package a running svc serves at {base}/mcp/svc-mcp.tgz (cli/svc-mcp-package.ts), so
// that a user of a hosted svc can run the local MCP server (deploy_site, upload_dataset, a wallet
// with caps) with one command: `npx -y -p {base}/mcp/svc-mcp.tgz svc-mcp`. svc-mcp's bundle
// (dist/mcp, bin/build.mjs) holds every package it uses, so the package is that folder, a bin
// and a manifest without dependencies: ~1 MB, installed without the registry. Its file name carries
// the version and a digest of its bytes: npx keeps an install per package spec, so a new build must
// be a new URL. `npm pack` makes the tarball (the format npm installs), from a staged copy.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Writes dist/svc-mcp-<version>-<digest>.tgz and dist/svc-mcp.json (its name, size, sha256). */
export function packSvcMcp(root) {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mcp-pack-'));
  try {
    const dir = path.join(stage, 'package');
    fs.cpSync(path.join(root, 'dist', 'mcp'), path.join(dir, 'mcp'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'svc-mcp.mjs'), "#!/usr/bin/env node\nimport './mcp/svc-mcp.mjs';\n");
    const manifest = {
      name: 'svc-agent-host-mcp',
      version: pkg.version,
      description: `svc-mcp, the MCP server of ${pkg.name} (bundled: no dependencies). Served by a running svc at /mcp/svc-mcp.tgz.`,
      license: pkg.license,
      type: 'module',
      engines: pkg.engines,
      bin: { 'svc-mcp': 'svc-mcp.mjs' },
    };
    fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    const r = spawnSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', stage], {
      cwd: dir,
      encoding: 'utf8',
      shell: process.platform === 'win32',
      env: { ...process.env, npm_config_loglevel: 'error' },
    });
    if (r.status !== 0) throw new Error(`npm pack failed: ${(r.stderr || r.error?.message || '').trim().split('\n')[0]}`);
    const packed = path.join(stage, JSON.parse(r.stdout)[0].filename);
    const bytes = fs.readFileSync(packed);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const file = `svc-mcp-${pkg.version}-${sha256.slice(0, 12)}.tgz`;
    fs.writeFileSync(path.join(root, 'dist', file), bytes);
    fs.writeFileSync(path.join(root, 'dist', 'svc-mcp.json'), `${JSON.stringify({ file, version: pkg.version, bytes: bytes.length, sha256 })}\n`);
    return { file, bytes: bytes.length };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}
