#!/usr/bin/env node
// `postinstall`: small performance patches to dependencies, each a change to send upstream. A patch
// applies only to the exact version it was written for and only where every line it changes is
// found as published; otherwise it is skipped with a line saying so and everything works as before,
// slower. It never fails an install. A file is replaced (written beside it, then renamed), never
// edited in place, so a package manager's shared store behind a hard link is left alone. Run again:
// a no-op. `--check` exits 1 when a patch is not in place (test/datasets/parquet-decoding.test.ts
// runs it, so a version bump that leaves a patch behind fails the tests).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'svc patch (bin/patch-deps.mjs)';

// hyparquet decodes a Parquet page value by value into plain arrays where typed arrays would do:
// docs/datasets.md, "Benchmark", has the profiles.
export const PATCHES = [
  {
    // A page of a nullable top-level column (OPTIONAL: how pyarrow, DuckDB and hyparquet-writer
    // write columns by default) was copied value by value into a plain array, boxing each number,
    // even without nulls: such a page is handed over as decoded, as a required column's page is.
    pkg: 'hyparquet',
    version: '1.31.5',
    file: 'src/assemble.js',
    edits: [
      {
        find: '  const maxDefinitionLevel = getMaxDefinitionLevel(schemaPath)\n',
        replace: [
          '  const maxDefinitionLevel = getMaxDefinitionLevel(schemaPath)',
          `  // ${MARK}: a page of a top-level optional column without nulls is its values, as a`,
          "  // required column's page is (one def level per value: all defined).",
          '  if (!output.length && !repetitionLevels.length && schemaPath.length === 2 && values.length && values.length === (definitionLevels?.length || values.length)) return values',
          '',
        ].join('\n'),
      },
    ],
  },
  {
    // Definition levels (one small number per value of a nullable column) were read into plain
    // arrays, 30 ns a value here: into a Uint8Array (any level below 256), pages of both versions.
    pkg: 'hyparquet',
    version: '1.31.5',
    file: 'src/datapage.js',
    edits: [
      {
        find: '  const definitionLevels = new Array(daph.num_values)\n',
        replace: `  const definitionLevels = maxDefinitionLevel < 256 ? new Uint8Array(daph.num_values) : new Array(daph.num_values) // ${MARK}\n`,
      },
      {
        find: '  if (numNulls === 0) definitionLevels.length = 0\n\n  return { definitionLevels, numNulls }\n',
        replace: `  return { definitionLevels: numNulls === 0 ? [] : definitionLevels, numNulls } // ${MARK}: a typed array cannot be emptied\n`,
      },
      {
        find: '    const values = new Array(daph2.num_values)\n    readRleBitPackedHybrid(reader, bitWidth(maxDefinitionLevel), values, daph2.definition_levels_byte_length)\n',
        replace: `    const values = maxDefinitionLevel < 256 ? new Uint8Array(daph2.num_values) : new Array(daph2.num_values) // ${MARK}\n    readRleBitPackedHybrid(reader, bitWidth(maxDefinitionLevel), values, daph2.definition_levels_byte_length)\n`,
      },
    ],
  },
  // postgres.js sends a statement that is not kept prepared (drizzle's every query) in two round trips
  // when it has parameters: Parse and Describe first, to learn the parameter types, then Bind and
  // Execute. docs/performance.md, "PostgreSQL statements". Both module builds (import and require).
  ...['src/connection.js', 'cjs/src/connection.js'].map((file) => ({
    pkg: 'postgres',
    version: '3.4.9',
    file,
    edits: [
      {
        find: '    q.describeFirst = q.onlyDescribe || (parameters.length && !q.prepared)\n',
        replace: [
          `    // ${MARK}: an unnamed statement whose parameters are all scalars goes in one round trip`,
          '    // (Parse, Describe, Bind, Execute, Sync), the values as text for the server to type, instead of',
          '    // a first round trip that asks the parameter types only to choose how to serialize them.',
          "    q.describeFirst = q.onlyDescribe || (parameters.length && !q.prepared && (q.prepare || !!q.cursorFn || parameters.some(x => x !== null && typeof x === 'object')))",
          '',
        ].join('\n'),
      },
    ],
  })),
  // postgres.js keeps every named statement of a connection for the connection's life, so a client
  // that prepares statements whose texts keep changing (the Table API's reads name fields and
  // tables) grows without bound on both sides. With `max_prepared` (an option this patch adds; absent
  // when it is not applied) a connection keeps at most that many: the least recently used is
  // forgotten and closed on the server. docs/performance.md, "Table API reads" (issue 53).
  // A prepared statement is also found without building its key anew at each run: postgres.js
  // concatenated the parameter types and the whole text, a new string hashed for every lookup.
  ...['src/connection.js', 'cjs/src/connection.js'].map((file) => ({
    pkg: 'postgres',
    version: '3.4.9',
    file,
    edits: [
      {
        find: '    , statements = {}\n',
        replace: [
          '    , statements = {}',
          `    // ${MARK}: the named statements kept with options.max_prepared, least recently used first, and`,
          "    // the Close messages sent, in order (true: a statement `keep` closed, false: a cursor's portal).",
          '    , kept = new Map()',
          '    , keptNewest = null',
          '    , closes = []',
          '    // the key of each statement text (by its parameter types), so that a text run again, the same',
          '    // string, finds its statement without a new key to hash: `signatureOf`.',
          '    , signatures = new Map()',
          '',
        ].join('\n'),
      },
      {
        find: '      statements = {}\n      needsTypes = options.fetch_types\n',
        replace: `      statements = {}\n      kept.clear(), keptNewest = null, closes = [] // ${MARK}\n      needsTypes = options.fetch_types\n`,
      },
      {
        find: '    q.signature = q.prepare && types + string\n',
        replace: `    q.signature = q.prepare && signatureOf(types, string) // ${MARK}\n`,
      },
      {
        find: '    q.prepared = q.prepare && q.signature in statements\n',
        replace: [
          '    q.prepared = q.prepare && q.signature in statements',
          `    // ${MARK}: most recently used. Re-inserted only when not the newest already: a delete and a set`,
          "    // at every run made the Map rebuild its table every few runs (as svc's LruMap did).",
          '    q.prepared && q.signature !== keptNewest && kept.has(q.signature) && (kept.delete(q.signature), kept.set(q.signature, statements[q.signature]), keptNewest = q.signature)',
          '',
        ].join('\n'),
      },
      {
        find: '    query.prepare && (statements[query.signature] = query.statement)\n',
        replace: `    query.prepare && (statements[query.signature] = query.statement, options.max_prepared && keep(query.signature, query.statement)) // ${MARK}\n`,
      },
      {
        find: '  function retry(q, error) {\n    delete statements[q.signature]\n',
        replace: [
          `  // ${MARK}: at most options.max_prepared named statements on this connection. The least recently`,
          '  // used is forgotten and closed on the server: Close (S) without a Sync of its own, so it travels',
          "  // with the messages written next; its CloseComplete is told from a cursor's by `closes`.",
          '  function keep(signature, statement) {',
          '    kept.set(signature, statement)',
          '    keptNewest = signature',
          '    if (kept.size <= options.max_prepared)',
          '      return',
          '    const [oldest, { name }] = kept.entries().next().value',
          '    kept.delete(oldest)',
          '    delete statements[oldest]',
          '    closes.push(true)',
          "    write(b().C().str('S').str(name + b.N).end())",
          '  }',
          '',
          `  // ${MARK}: the key of a statement in \`statements\` (its parameter types, then its text), the same`,
          '  // string each time a text is run with the same types, its hash computed once. At most 1,000 texts.',
          '  function signatureOf(types, string) {',
          '    let byTypes = signatures.get(string)',
          '    if (!byTypes) {',
          '      signatures.size >= 1000 && signatures.clear()',
          '      signatures.set(string, byTypes = new Map())',
          '    }',
          '    const key = types.join()',
          '    let signature = byTypes.get(key)',
          '    signature === undefined && byTypes.set(key, signature = key + string)',
          '    return signature',
          '  }',
          '',
          '  function retry(q, error) {',
          '    delete statements[q.signature]',
          `    kept.delete(q.signature) // ${MARK}`,
          '',
        ].join('\n'),
      },
      {
        find: '        ? write(Close(query.portal))\n',
        replace: `        ? (closes.push(false), write(Close(query.portal))) // ${MARK}: a cursor's CloseComplete\n`,
      },
      {
        find: '  function CloseComplete() {\n',
        replace: `  function CloseComplete() {\n    if (closes.shift()) // ${MARK}: a statement \`keep\` closed\n      return\n`,
      },
    ],
  })),
  // The option `max_prepared` for the patch above, parsed as postgres.js parses its others (a number;
  // null when not given): `sql.options.max_prepared` says the patch is in place.
  ...['src/index.js', 'cjs/src/index.js'].map((file) => ({
    pkg: 'postgres',
    version: '3.4.9',
    file,
    edits: [
      {
        find: "  const ints = ['idle_timeout', 'connect_timeout', 'max_lifetime', 'max_pipeline', 'backoff', 'keep_alive']\n",
        replace: `  const ints = ['idle_timeout', 'connect_timeout', 'max_lifetime', 'max_pipeline', 'backoff', 'keep_alive', 'max_prepared'] // ${MARK}: max_prepared\n`,
      },
      {
        find: '    prepare         : true,\n',
        replace: `    prepare         : true,\n    max_prepared    : null, // ${MARK}: named statements kept per connection (null: all)\n`,
      },
    ],
  })),
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

/** The patch's file and text, or why it cannot apply. */
function target(patch) {
  const dir = packageDir(patch.pkg);
  if (!dir) return { skip: `${patch.pkg} is not installed` };
  const { version } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (version !== patch.version) return { skip: `${patch.pkg} is ${version}, the patch is for ${patch.version}` };
  const file = path.join(dir, patch.file);
  return { file, text: fs.readFileSync(file, 'utf8') };
}

const applied = (patch, text) => patch.edits.every((e) => text.includes(e.replace));

/** Applies `patch`; answers why it did not, or null. */
function apply(patch) {
  const { file, text, skip } = target(patch);
  if (skip) return skip;
  if (applied(patch, text)) return null;
  if (!patch.edits.every((e) => text.includes(e.find))) return `${patch.file} no longer holds the lines the patch changes`;
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(
    tmp,
    patch.edits.reduce((t, e) => t.replace(e.find, () => e.replace), text), // a function: no `$` patterns in the new text
  );
  fs.renameSync(tmp, file);
  return null;
}

/** `text` of a patched file as published: what a bench compares the patch with (bench/postgres.ts). */
export function unpatched(patch, text) {
  return patch.edits.reduce((t, e) => t.replace(e.replace, () => e.find), text);
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]);

if (isMain && process.argv.includes('--check')) {
  const missing = PATCHES.filter((p) => {
    const { text, skip } = target(p);
    return skip || !applied(p, text);
  });
  for (const p of missing) console.error(`patch-deps: ${p.pkg}/${p.file} is not patched (bin/patch-deps.mjs)`);
  process.exit(missing.length ? 1 : 0);
}

for (const patch of isMain ? PATCHES : []) {
  let skipped;
  try {
    skipped = apply(patch);
  } catch (e) {
    skipped = e.message;
  }
  if (skipped) console.warn(`patch-deps: ${patch.pkg}/${patch.file} not patched (${skipped}); it works as published, slower`);
}
