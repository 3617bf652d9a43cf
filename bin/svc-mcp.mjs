#!/usr/bin/env node
// The MCP server: the bundled build (dist/) when it is up to date, else the sources through tsx (see bin/svc.mjs).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freshDist } from './dist-fresh.mjs';

const built = freshDist(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), 'mcp/svc-mcp');
if (built) await import(pathToFileURL(built).href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../mcp/main.ts');
}
