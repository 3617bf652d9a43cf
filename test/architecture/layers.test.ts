import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of docs/CONTRIBUTING.md, kept by reading every import of our own source:
 * shared imports nothing of ours; service never imports mcp, wallet or cli; wallet never imports
 * mcp, service or cli; mcp never imports service or cli; only the composition root (cli/) sees all.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const LAYERS = ['shared', 'service', 'wallet', 'mcp', 'cli'] as const;
type Layer = (typeof LAYERS)[number];
const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  shared: ['shared'],
  service: ['service', 'shared'],
  wallet: ['wallet', 'shared'],
  mcp: ['mcp', 'wallet', 'shared'],
  cli: ['cli', 'service', 'mcp', 'wallet', 'shared'],
};

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"`]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sourceFiles(full));
    else if (/\.(ts|mts|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** Our own files a file imports (resolved paths relative to the repository); `runtime` leaves out type-only imports. */
function localImports(file: string, runtime = false): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    if (runtime && /^[\s;]*(?:import|export)\s+type\s/.test(m[0])) continue;
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec?.startsWith('.')) continue;
    const target = path.resolve(path.dirname(file), spec).replace(/\.js$/, '.ts');
    found.push(path.relative(ROOT, target));
  }
  return found;
}

const files = LAYERS.filter((l) => fs.existsSync(path.join(ROOT, l))).flatMap((l) => sourceFiles(path.join(ROOT, l)));
const graph = new Map(files.map((f) => [path.relative(ROOT, f), localImports(f)]));
const layerOf = (rel: string) => rel.split(path.sep)[0] as Layer;

describe('import layers', () => {
  it('finds the source it checks', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect([...graph.keys()].some((f) => f.startsWith('cli/'))).toBe(true);
  });

  it('no layer imports one it must not', () => {
    const violations: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        if ((LAYERS as readonly string[]).includes(to) && !MAY_IMPORT[from].includes(to)) violations.push(`${file} → ${target}`);
      }
    }
    expect(violations).toEqual([]);
  });
});

/**
 * The rows of docs/CONTRIBUTING.md's picture of service/, lowest first: a file of a folder imports
 * only folders on a lower row (or its own). `kernel` (logger, config types, AppError, ids, clock,
 * package root, the request's context) is the floor every folder may import; it imports nothing of
 * the service. The files at service/'s root are the hub above them all: the leaves (LEAVES) import
 * none of them, the other folders only the `Deps` type, the one shape the hub hands every feature.
 */
const SERVICE_ROWS: readonly (readonly string[])[] = [
  ['kernel'],
  ['db'],
  ['http'],
  ['accounts', 'payments', 'storage', 'metrics', 'cdn', 'mcp-tasks'],
  ['agent', 'auth'],
  ['sites', 'functions', 'oauth'],
  ['tables'],
  ['datasets', 'usage'],
  ['dashboard'],
  ['abuse'],
  ['operator'],
  ['admin', 'housekeeping', 'discovery'],
];
const LEAVES = ['kernel', 'db', 'http', 'accounts', 'payments', 'storage', 'metrics', 'cdn', 'mcp-tasks'];
const rowOf = (folder: string) => SERVICE_ROWS.findIndex((row) => row.includes(folder));
const serviceFolderOf = (rel: string) => {
  const parts = rel.split(path.sep);
  return parts[0] === 'service' && parts.length > 2 ? parts[1]! : undefined;
};
const isServiceRootFile = (rel: string) => rel.split(path.sep).length === 2 && rel.startsWith(`service${path.sep}`);

/** Imports of our own service files that run up the rows: `file → target`. */
function arrowsUp(g: Map<string, string[]>, typeImportsOfDeps: Map<string, boolean>): string[] {
  const up: string[] = [];
  for (const [file, imports] of g) {
    const from = serviceFolderOf(file);
    if (from === undefined) continue;
    for (const target of imports) {
      const to = serviceFolderOf(target);
      if (to !== undefined && to !== from && rowOf(to) >= rowOf(from)) up.push(`${file} → ${target}`);
      if (to === undefined && isServiceRootFile(target)) {
        const depsType = target === path.join('service', 'deps.ts') && typeImportsOfDeps.get(file) === true;
        if (LEAVES.includes(from) || !depsType) up.push(`${file} → ${target}`);
      }
    }
  }
  return up;
}

/** Whether every import of service/deps.ts in a file is type-only. */
function depsTypeOnly(file: string): boolean {
  return !localImports(path.join(ROOT, file), true).includes(path.join('service', 'deps.ts'));
}

describe("service's rows", () => {
  it('every folder of service/ is on a row of the picture', () => {
    const folders = new Set([...graph.keys()].map(serviceFolderOf).filter((f) => f !== undefined));
    expect([...folders].filter((f) => rowOf(f) === -1)).toEqual([]);
  });

  it('no import runs up the rows: leaves (kernel, db, http, payments, storage, …) import nothing above them, the rest only the Deps type', () => {
    const typeOnly = new Map([...graph.keys()].map((f) => [f, depsTypeOnly(f)]));
    expect(arrowsUp(graph, typeOnly)).toEqual([]);
  });

  it('would see an arrow up (a leaf importing the hub, a folder a higher one, a feature the hub at run time)', () => {
    const p = (...parts: string[]) => path.join('service', ...parts);
    const g = new Map([
      [p('payments', 'collect.ts'), [p('deps.ts'), p('kernel', 'logger.ts')]],
      [p('db', 'counters.ts'), [p('sites', 'sites.ts')]],
      [p('sites', 'sites.ts'), [p('deps.ts'), p('db', 'client.ts')]],
      [p('tables', 'tables.ts'), [p('config.ts')]],
    ]);
    expect(arrowsUp(g, new Map([[p('sites', 'sites.ts'), false]]))).toEqual([
      `${p('payments', 'collect.ts')} → ${p('deps.ts')}`,
      `${p('db', 'counters.ts')} → ${p('sites', 'sites.ts')}`,
      `${p('sites', 'sites.ts')} → ${p('deps.ts')}`,
      `${p('tables', 'tables.ts')} → ${p('config.ts')}`,
    ]);
  });
});

/** Groups of files that import each other, directly or through others (Tarjan's components). */
function importLoops(g: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const loops: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of g.get(v) ?? []) {
      if (!g.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) loops.push(component.sort());
  };
  for (const v of g.keys()) if (!index.has(v)) visit(v);
  return loops;
}

/**
 * The feature folders of service/ (sites, tables, oauth, dashboard, …) by the folders they import at
 * run time. Type-only imports are left out: they name a shape and vanish from the running program.
 * The files at service/'s root (deps, config, app) are the hub every feature is wired through, and
 * are left out too (the rows above keep which of them a folder may name).
 */
function serviceFolderGraph(): Map<string, string[]> {
  const folderOf = (rel: string) => {
    const parts = rel.split(path.sep);
    return parts[0] === 'service' && parts.length > 2 ? parts[1]! : undefined;
  };
  const folders = new Map<string, Set<string>>();
  for (const [file] of graph) {
    const from = folderOf(file);
    if (!from) continue;
    const edges = folders.get(from) ?? new Set<string>();
    folders.set(from, edges);
    for (const target of localImports(path.join(ROOT, file), true)) {
      const to = folderOf(target);
      if (to && to !== from) edges.add(to);
    }
  }
  return new Map([...folders].map(([f, e]) => [f, [...e]]));
}

describe('import loops', () => {
  it("service's feature folders depend one way: no two import each other at run time, directly or through others", () => {
    const folders = serviceFolderGraph();
    expect(folders.size).toBeGreaterThan(10);
    expect(importLoops(folders)).toEqual([]);
  });

  it('no two files import each other, directly or through others', () => {
    expect(importLoops(graph)).toEqual([]);
  });

  it('would see a loop', () => {
    expect(
      importLoops(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', ['c.ts']],
          ['c.ts', ['a.ts']],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
