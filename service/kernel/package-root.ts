import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root folder (where package.json, drizzle/ and the source tree are), found by walking
 * up from this module: the same answer when the sources run through tsx (service/…) and when they run
 * bundled (dist/…), so files the service reads at run time are found either way.
 */
function findRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && fs.existsSync(path.join(dir, 'drizzle'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error('svc: cannot find the package root (package.json beside drizzle/) above the running module');
    dir = up;
  }
}

export const PACKAGE_ROOT = findRoot();

/** An absolute path inside the package. */
export const packagePath = (...parts: string[]): string => path.join(PACKAGE_ROOT, ...parts);
