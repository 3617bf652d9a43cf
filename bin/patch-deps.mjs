#!/usr/bin/env node
// `postinstall`: small performance patches to dependencies, each a change to send upstream. A patch
// applies only to the exact version it was written for and only where its anchor text is found;
// otherwise it is skipped with a line saying so and everything works as before, slower. It never
// fails an install. The file is replaced (written beside it, then renamed), never edited in place,
// so a package manager's shared store behind a hard link is left alone. Run again: a no-op.
// test/datasets/parquet-decoding.test.ts fails when a patch stops applying (after an upgrade, say).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'svc patch (bin/patch-deps.mjs)';

const PATCHES = [
  {
    // hyparquet builds every page of a nullable top-level column value by value into a plain array
    // (assembleLists), boxing each number: 60 % of a Parquet conversion's decoding (docs/datasets.md,
    // "Benchmark"). A page without nulls is handed over as decoded, as a required column's page is.
    pkg: 'hyparquet',
    version: '1.31.5',
    file: 'src/assemble.js',
    anchor: '  const maxDefinitionLevel = getMaxDefinitionLevel(schemaPath)\n',
    insert: [
      `  // ${MARK}: a page of a top-level optional column without nulls is its values, as a`,
      "  // required column's page is (one def level per value: all defined).",
      '  if (!output.length && !repetitionLevels.length && schemaPath.length === 2 && values.length && values.length === (definitionLevels?.length || values.length)) return values',
      '',
    ].join('\n'),
  },
];

/** The installed package's folder, found as Node resolves it from this package (hoisted or not). */
function packageDir(name) {
  let dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function apply(patch) {
  const dir = packageDir(patch.pkg);
  if (!dir) return `${patch.pkg} is not installed`;
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (version !== patch.version) return `${patch.pkg} is ${version}, the patch is for ${patch.version}`;
  const file = path.join(dir, patch.file);
  const text = fs.readFileSync(file, 'utf8');
  if (text.includes(MARK)) return null;
  if (!text.includes(patch.anchor)) return `${patch.file} no longer holds the line the patch follows`;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, text.replace(patch.anchor, patch.anchor + patch.insert));
  fs.renameSync(tmp, file);
  return null;
}

for (const patch of PATCHES) {
  let skipped;
  try {
    skipped = apply(patch);
  } catch (e) {
    skipped = e.message;
  }
  if (skipped) console.warn(`patch-deps: ${patch.pkg}/${patch.file} not patched (${skipped}); it works as published, slower`);
}
