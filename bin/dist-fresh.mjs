// Whether dist/ (bin/build.mjs) is as new as the sources; only node: modules, so asking is cheap.
import fs from 'node:fs';
import path from 'node:path';

const SOURCE_DIRS = ['cli', 'service', 'shared', 'mcp', 'wallet'];

/** The newest modification time (ms) of any .ts file of the programs. */
export function newestSourceMtime(root) {
  let newest = 0;
  for (const dir of SOURCE_DIRS) {
    for (const rel of fs.readdirSync(path.join(root, dir), { recursive: true })) {
      if (!String(rel).endsWith('.ts')) continue;
      const m = fs.statSync(path.join(root, dir, String(rel))).mtimeMs;
      if (m > newest) newest = m;
    }
  }
  return newest;
}

/** dist/<name>.mjs when it exists and no source changed since it was built; otherwise null. */
export function freshDist(root, name) {
  const file = path.join(root, 'dist', `${name}.mjs`);
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(path.join(root, 'dist', 'build.json'), 'utf8'));
  } catch {
    return null;
  }
  if (!fs.existsSync(file)) return null;
  return newestSourceMtime(root) <= stamp.sourceMtime ? file : null;
}
