#!/usr/bin/env node
// The svc CLI: the bundled build (dist/, see bin/build.mjs) when it is up to date, else the TypeScript
// sources through tsx: no build step is ever needed between a clone and `npm start`.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freshDist } from './dist-fresh.mjs';

const built = freshDist(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..'), 'svc');
if (built) await import(pathToFileURL(built).href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../cli/svc.ts');
}
