import type { McpServer, RegisteredTool, ServerContext } from '@modelcontextprotocol/server';
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/server';
import { z } from 'zod';
import { undeclaredFields } from '../shared/undeclared-fields.js';
import type { McpContext } from './context.js';
import { DATA_ICONS, type Icons, iconsOf, localIconsOf, servedIcons } from './icons.js';
import { inTraceOf } from './trace-context.js';
import { annotationsOf, type Toolset, toolsetOf } from './toolsets.js';
import { rendersViews, viewMetaOf } from './views/views.js';

/** What every tool declares: no output schema (structured content is returned without one). */
export interface ToolConfig {
  /** Text, or a function of the context's prices (read when the tool list is asked for, after `ctx.ready`). */
  description: string | (() => string);
  inputSchema: Record<string, z.core.$ZodType>;
  _meta?: Record<string, unknown>;
  /** What this session lists that does the same, said first when the tool's toolset is off ("account_publish_app does this for the account, free."). */
  instead?: string;
  /** Where arguments it does not have, and whose names guess none it has, most likely belong (a record's fields given as arguments). */
  strayArguments?: (names: readonly string[]) => string;
}

interface Entry {
  name: string;
  toolset: Toolset | null;
  config: ToolConfig;
  tool: RegisteredTool;
  /** A forwarded tool's input schema as its own server lists it (listed verbatim). */
  listedInputSchema?: Tool['inputSchema'];
  /** What a host is told of the tool: annotationsOf(name), or a forwarded tool's own. */
  annotations?: ToolAnnotations;
  icons: Tool['icons'];
}

/** Each server's tools in registration order: what tools/list shows and enable_toolset switches on. */
const registered = new WeakMap<McpServer, Entry[]>();

function remember(server: McpServer, entry: Entry): void {
  const list = registered.get(server) ?? [];
  list.push(entry);
  registered.set(server, list);
}

/**
 * The icons this face stamps: the hosted endpoints serve them from the service's own origin
 * (`{base}/mcp/icons/…`); svc-mcp, which has none, sends data: URIs (mcp/icons.ts).
 */
export function iconsFor(ctx: McpContext): Icons {
  return ctx.hosted ? servedIcons(ctx.config.serviceUrl) : DATA_ICONS;
}

/**
 * Registers a tool when its toolset is enabled for this session; in dynamic mode every tool is
 * registered and those of toolsets not yet enabled are disabled (unlisted) until enable_toolset.
 * `toolset: null` is always on (the toolset tools themselves).
 */
export function addTool(
  server: McpServer,
  ctx: McpContext,
  name: string,
  config: ToolConfig,
  cb: unknown,
  toolset: Toolset | null = toolsetOf(name, !ctx.hosted),
): void {
  const on = toolset === null || ctx.toolsets.enabled.has(toolset);
  if (!on && !ctx.toolsets.dynamic) {
    addUnavailableTool(server, name, toolsetOff(ctx, name, toolset!, config.instead));
    return;
  }
  // The SDK's overloads cannot be named generically; ToolConfig is the shape they take. Tools are
  // listed by our handler below (installCompactToolList), never by the SDK's: it needs no description.
  const { instead: _instead, strayArguments: _stray, ...listed } = config;
  const annotations = annotationsOf(name);
  const sdkConfig = { ...listed, annotations, description: undefined };
  const tool = server.registerTool(name, sdkConfig as never, afterReady(ctx, cb as (...args: unknown[]) => unknown) as never);
  if (!on) tool.disable();
  remember(server, { name, toolset, config, tool, annotations, icons: iconsOf(toolset, iconsFor(ctx)) });
}

/**
 * A tool this session does not have, for a reason the caller can act on: unlisted (it costs no
 * tokens in tools/list), and a call answers `why` (what to do instead) rather than the SDK's bare
 * "Tool … not found".
 */
export function addUnavailableTool(server: McpServer, name: string, why: string): void {
  server.registerTool(name, { inputSchema: z.looseObject({}) } as never, (() => ({ isError: true, content: [{ type: 'text', text: why }] })) as never);
  const names = unavailable.get(server) ?? new Set<string>();
  names.add(name);
  unavailable.set(server, names);
}

/** Each server's unlisted tools that answer why they are not here (`addUnavailableTool`). */
const unavailable = new WeakMap<McpServer, Set<string>>();

/** Why a tool whose toolset this session did not turn on is not here: what does the same here, else how to turn it on. */
function toolsetOff(ctx: McpContext, name: string, toolset: Toolset, instead: string | undefined): string {
  const wanted = [...ctx.toolsets.enabled, toolset].join(',');
  const how = ctx.hosted
    ? `ask the user to add ?toolsets=${wanted} to the endpoint's URL`
    : `ask the user to start ${ctx.config.program} with SVC_TOOLSETS=${wanted}`;
  if (instead) return `${name} is in the "${toolset}" toolset, not turned on in this session: ${instead} (To list ${name} itself, ${how}.)`;
  return `${name} is in the "${toolset}" toolset, which this session did not turn on: ${how} ("dynamic" lets the session turn toolsets on itself).`;
}

/**
 * Registers a tool of another MCP server (mcp/upstream.ts) under its own name, description, input
 * schema and annotations. Its arguments pass through unchecked here: the server that owns the tool
 * checks them and answers with the exact issue.
 */
export function addForwardedTool(
  server: McpServer,
  ctx: McpContext,
  remote: Tool,
  cb: (args: Record<string, unknown>, extra: ServerContext) => unknown,
  toolset: Toolset,
): void {
  const on = ctx.toolsets.enabled.has(toolset);
  if (!on && !ctx.toolsets.dynamic) return;
  const config: ToolConfig = { description: remote.description ?? '', inputSchema: {} };
  const tool = server.registerTool(remote.name, { ...config, inputSchema: z.looseObject({}) } as never, afterReady(ctx, cb as never) as never);
  if (!on) tool.disable();
  remember(server, {
    name: remote.name,
    toolset,
    config,
    tool,
    listedInputSchema: remote.inputSchema,
    annotations: remote.annotations,
    icons: localIconsOf(remote.icons, ctx.config.serviceUrl) ?? iconsOf(toolset, iconsFor(ctx)),
  });
}

/** A tool callback that first waits for the context's prices: no call quotes or caps on a price not yet known. */
function afterReady(ctx: McpContext, cb: (...args: unknown[]) => unknown): (...args: unknown[]) => Promise<unknown> {
  return async (...args) => {
    await ctx.ready;
    return cb(...args);
  };
}

/** Whether this server registered a tool named `name` (listed, or disabled until its toolset is enabled). */
export function hasTool(server: McpServer, name: string): boolean {
  return (registered.get(server) ?? []).some((e) => e.name === name);
}

/** The tools of `toolset` on this server (empty when none were registered). */
export function toolsOf(server: McpServer, toolset: Toolset): RegisteredTool[] {
  return (registered.get(server) ?? []).filter((e) => e.toolset === toolset).map((e) => e.tool);
}

/** Replaces `{"$ref":"#/definitions/X"}` by X itself: a model reads one nested object more easily than a reference. */
function inlineRefs(node: unknown, defs: Record<string, unknown>): unknown {
  if (Array.isArray(node)) return node.map((n) => inlineRefs(n, defs));
  if (typeof node !== 'object' || node === null) return node;
  const ref = (node as { $ref?: string }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/definitions/')) return inlineRefs(defs[ref.slice('#/definitions/'.length)], defs);
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, inlineRefs(v, defs)]));
}

/**
 * Drops what costs a model tokens and buys it nothing: length, item-count and integer-range bounds
 * and patterns (the SDK still validates every call against the full zod schema and answers with the
 * exact issue), and the string spellings of flags (`"1"`, `"true"`) the HTTP query form accepts.
 */
function lean(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(lean);
  if (typeof node !== 'object' || node === null) return node;
  const n = node as Record<string, unknown>;
  const flag = Array.isArray(n.anyOf) && (n.anyOf as { type?: string }[]).some((a) => a.type === 'boolean');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(n)) {
    if (['minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'minimum', 'maximum'].includes(k)) continue;
    if (flag && k === 'anyOf') {
      out.type = 'boolean';
      continue;
    }
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, lean(s)])) : lean(v);
  }
  return out;
}

// JSON Schemas are derived from immutable zod shapes: computed once per shape, shared by every server.
const jsonSchemaCache = new WeakMap<object, Tool['inputSchema']>();

/** A tool's input as a compact JSON Schema: no `$schema`, definitions inlined, lean (above). */
export function compactInputSchema(shape: Record<string, z.core.$ZodType>): Tool['inputSchema'] {
  let hit = jsonSchemaCache.get(shape);
  if (!hit) {
    const { $schema: _s, definitions, ...schema } = z.toJSONSchema(z.object(shape), { target: 'draft-7', io: 'input' }) as Record<string, unknown>;
    hit = lean(inlineRefs(schema, (definitions ?? {}) as Record<string, unknown>)) as Tool['inputSchema'];
    jsonSchemaCache.set(shape, hit);
  }
  return hit;
}

/**
 * tools/list as a model pays for it: name, description, compact input schema; and for the host, every
 * annotation and the toolset's icon (neither is shown to the model). Replaces the SDK's listing (which
 * adds `$schema`, `execution` and definitions to every tool, and converts every schema again on every
 * call). The order is registration order, the same for every request and every server built alike
 * (the spec asks for a deterministic order: clients cache the list and models cache their prompt).
 *
 * A tool with a view (mcp/views/) adds `_meta.ui.resourceUri`, and nothing else, for a client that
 * renders views. `views: 'declared'` (a connection that lives: stdio) lists it only to a client whose
 * `initialize` declared the UI extension; `'always'` (stateless HTTP: a tools/list comes without the
 * client's capabilities, and a pooled server answered another client's `initialize`) lists it to
 * every client, which costs a client without views the `_meta` keys alone.
 */
export function installCompactToolList(server: McpServer, ready: Promise<void>, views: 'declared' | 'always' = 'declared'): void {
  server.server.setRequestHandler('tools/list', async () => {
    await ready;
    return { tools: listedTools(server, views === 'always' || rendersViews(server.server.getClientCapabilities())) };
  });
}

function listedTools(server: McpServer, withViews: boolean): Tool[] {
  return (registered.get(server) ?? [])
    .filter((e) => e.tool.enabled)
    .map((e) => {
      const { annotations, icons } = e;
      const { description } = e.config;
      const meta = withViews ? { ...e.config._meta, ...viewMetaOf(e.name) } : e.config._meta;
      return {
        name: e.name,
        description: typeof description === 'function' ? description() : description,
        inputSchema: e.listedInputSchema ?? compactInputSchema(e.config.inputSchema),
        ...(annotations ? { annotations } : {}),
        ...(icons?.length ? { icons } : {}),
        ...(meta && Object.keys(meta).length ? { _meta: meta } : {}),
      };
    });
}

export type RequestHandler = (request: { params?: { name?: unknown; arguments?: unknown } }, extra: unknown) => Promise<unknown>;

/**
 * tools/call of a name this session has no tool for, or of a tool whose toolset is not turned on
 * yet, answers what to call instead (the SDK says only "Tool … not found" / "Tool … disabled"):
 * models guess names (create_table, table_insert) and a tool error that names the nearest tools
 * puts them back on track. An argument the tool does not have is refused the same way, before
 * anything is done: the SDK drops unknown keys silently, so `slug` sent for `appName` published an
 * app under a random name. Every other call goes to the SDK's own handler.
 */
export function installToolCallHints(server: McpServer, options: { readOnly: boolean }): void {
  // The SDK keeps its tools/call handler in Protocol's handler map (not a public API: pinned version,
  // and test/mcp/next-steps.test.ts fails if it moves).
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RequestHandler> })._requestHandlers;
  const sdkCall = handlers.get('tools/call');
  if (!sdkCall) return;
  handlers.set('tools/call', async (request, extra) => {
    const name = request.params?.name;
    const hint = typeof name === 'string' ? callHint(server, name, request.params?.arguments, options.readOnly) : undefined;
    if (hint) return { isError: true, content: [{ type: 'text', text: hint }] };
    // The service requests the tool makes join the call's trace (`_meta.traceparent`).
    return inTraceOf((request.params as { _meta?: Record<string, unknown> } | undefined)?._meta, () => sdkCall(request, extra));
  });
}

/** Why `name` cannot be called in this session, with what to call instead; undefined when it can (or the SDK knows it). */
function callHint(server: McpServer, name: string, args: unknown, readOnly: boolean): string | undefined {
  const entries = registered.get(server) ?? [];
  const entry = entries.find((e) => e.name === name);
  if (entry) {
    // A forwarded tool's own server checks its arguments.
    if (entry.tool.enabled || !entry.toolset) return entry.listedInputSchema ? undefined : (unknownArguments(entry, args) ?? invalidArguments(entry, args));
    return `${name} is in the "${entry.toolset}" toolset, not turned on in this session yet: call enable_toolset with {"toolset": "${entry.toolset}"} first.`;
  }
  if (unavailable.get(server)?.has(name)) return undefined; // an unlisted tool with its own answer
  const nearest = nearestTools(
    name,
    entries.filter((e) => e.tool.enabled).map((e) => e.name),
  );
  const suggestion = nearest.length ? ` Nearest: ${nearest.join(', ')}.` : '';
  const why = readOnly ? ' This server is read-only (SVC_READ_ONLY): tools that write or pay are not in it.' : '';
  return `There is no tool named ${name} in this session.${why}${suggestion} tools/list has every tool with its arguments.`;
}

/** Each tool's arguments as one object schema, made once per shape (what undeclaredFields walks and calls are checked against). */
const argumentSchemas = new WeakMap<object, z.ZodObject>();

function argumentSchema(entry: Entry): z.ZodObject {
  const shape = entry.config.inputSchema;
  let schema = argumentSchemas.get(shape);
  if (!schema) {
    schema = z.object(shape);
    argumentSchemas.set(shape, schema);
  }
  return schema;
}

/**
 * The refusal of arguments `entry` does not have, at any depth (`files.0.encodign`: the SDK would
 * drop it silently, as the service's API refuses it too: shared/undeclared-fields.ts).
 */
function unknownArguments(entry: Entry, args: unknown): string | undefined {
  const found = undeclaredFields(args, argumentSchema(entry));
  if (found.length === 0) return undefined;
  const meant: string[] = [];
  const listed = listedArguments(entry);
  const parts = found.map(({ at, unknown, declared }) => {
    const given = Object.keys((at ? valueAt(args, at) : typeof args === 'object' ? args : undefined) ?? {});
    const unguessed: string[] = [];
    const guesses = unknown.map((u) => {
      const guess = intendedName(u, declared, given);
      // `fields` where the argument is `schema: {fields}`: where it goes is the whole fix.
      if (guess && !at && wraps(listed[guess], u)) return `${u} (it goes inside ${guess}: {"${u}": …})`;
      if (guess && !at) meant.push(guess);
      if (!guess) unguessed.push(u);
      return guess ? `${u} (did you mean ${guess}?)` : u;
    });
    if (at) return `${at} has no field ${guesses.join(', ')}; its fields: ${declared.join(', ')}`;
    const list = declared.length ? `its arguments: ${declared.join(', ')}` : 'it takes no arguments';
    const stray = unguessed.length && entry.config.strayArguments ? ` (${entry.config.strayArguments(unguessed)})` : '';
    return `${entry.name} has no argument ${guesses.join(', ')}; ${list}${stray}`;
  });
  // An object none of whose fields were right was written in another shape than the argument's:
  // its listed shape follows. (A misspelt field beside right ones needs only the list of fields.)
  const misshapen = found.filter(({ at, unknown }) => at && Object.keys(valueAt(args, at) ?? {}).length === unknown.length);
  const shapes = listedShapes(listed, [...meant, ...misshapen.map(({ at }) => at.split('.')[0] ?? '')]);
  return `${found[0]!.at ? `${entry.name}: ` : ''}${parts.join('; ')}.${shapes} Nothing was done.`;
}

/** Names a model writes for an argument or field that is called otherwise here (keys: the name here). */
const NAMES_WRITTEN_FOR: Record<string, readonly string[]> = {
  where: ['filter', 'filters', 'conditions', 'query'],
  folder: ['dir', 'directory', 'path', 'root'],
  schema: ['fields', 'columns'],
  name: ['table', 'tablename', 'title'],
  appName: ['app', 'site', 'slug', 'appid', 'sitename', 'name'],
  appId: ['app', 'site', 'siteid', 'appname', 'slug'],
  table: ['tableslug', 'tablename', 'tableid'],
  recordId: ['id', 'record'],
  op: ['operator', 'operation', 'comparator', 'comparison'],
  slug: ['functionid', 'function', 'functionslug'],
  functionId: ['slug', 'function', 'functionslug', 'name', 'id'],
  content: ['body', 'text', 'data'],
};

/**
 * The declared name (not already given) that `unknown` most likely meant: one a model writes for
 * it (NAMES_WRITTEN_FOR), else one a letter or two away (`encodign`, `appname`); undefined when none.
 */
function intendedName(unknown: string, declared: readonly string[], given: readonly string[]): string | undefined {
  const open = declared.filter((d) => !given.includes(d));
  const u = unknown.toLowerCase();
  return open.find((d) => NAMES_WRITTEN_FOR[d]?.includes(u)) ?? nearby(u, open);
}

/** The one of `candidates` a letter or two from `word` (lower case; one letter for short words), nearest first. */
function nearby(word: string, candidates: readonly string[]): string | undefined {
  return candidates
    .map((c) => ({ c, distance: editDistance(word, c.toLowerCase()) }))
    .filter(({ distance }) => distance <= (word.length < 5 ? 1 : 2))
    .sort((a, b) => a.distance - b.distance)[0]?.c;
}

/** Levenshtein distance (short names only: argument names). */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

/**
 * " where is {…}." for each of `args` that is an object or a list, as `tools/list` shows it: what
 * the next call needs to be right. A simple argument's type is said where it is refused.
 */
function listedShapes(listed: ListedArguments, args: string[]): string {
  return [...new Set(args)]
    .filter((k) => isComplex(listed[k]))
    .map((k) => ` ${k} is ${JSON.stringify(listed[k])}.`)
    .join('');
}

/** The value at a dotted path (`files.0`) of the arguments. */
function valueAt(args: unknown, at: string): object | undefined {
  const v = valueAtPath(args, at.split('.'));
  return typeof v === 'object' && v !== null ? v : undefined;
}

type ListedArguments = Record<string, { type?: unknown; description?: unknown; properties?: unknown }>;

/** Each argument's schema as `tools/list` shows it. */
const listedArguments = (entry: Entry): ListedArguments => (compactInputSchema(entry.config.inputSchema).properties ?? {}) as ListedArguments;

const isComplex = (listed: { type?: unknown } | undefined) => ['object', 'array'].includes(String(listed?.type));

/** Whether an argument listed as an object holds a field named `name`. */
const wraps = (listed: { properties?: unknown } | undefined, name: string) =>
  typeof listed?.properties === 'object' && listed.properties !== null && name in listed.properties;

/**
 * The refusal of arguments of the wrong type or missing, in the words of the service's own
 * validation errors (`field: what is wrong`), followed by the listed schema of each complex argument
 * at fault, so the next call can be right; the SDK's answer was a bare JSON-RPC "-32602 Input
 * validation error" with zod's text. The SDK still validates what passes here.
 */
function invalidArguments(entry: Entry, args: unknown): string | undefined {
  const parsed = argumentSchema(entry).safeParse(args ?? {});
  if (parsed.success) return undefined;
  const listed = listedArguments(entry);
  const problems = parsed.error.issues.map((i) => problemOf(i, args, listed));
  // The listed shape of each complex argument at fault follows, but not for a value outside a list
  // of options: the options are said already.
  const shapes = listedShapes(
    listed,
    parsed.error.issues.filter((i) => i.code !== 'invalid_value').map((i) => String(i.path[0] ?? '')),
  );
  return `${entry.name}: ${problems.join('; ')}.${shapes} Nothing was done.`;
}

/** One issue of a call's arguments as the refusal says it: `field: what is wrong`, with the value meant where it can be told. */
function problemOf(i: z.core.$ZodIssue, args: unknown, listed: ListedArguments): string {
  const field = i.path.map(String).join('.') || '(arguments)';
  const given = valueAtPath(args, i.path);
  if (i.code === 'invalid_value' && typeof given === 'string' && i.values.every((v) => typeof v === 'string')) {
    const meant = intendedValue(given, i.values as string[]);
    const options = i.values.map((v) => JSON.stringify(v)).join(', ');
    return `${field}: ${JSON.stringify(given)} is not one of ${options}${meant ? ` (did you mean ${JSON.stringify(meant)}?)` : ''}`;
  }
  const missing = /^Invalid input: expected (.+), received undefined$/.exec(i.message);
  // A complex argument's shape follows; a simple one's type, with what it is for where the list says.
  const arg = i.path.length === 1 ? listed[String(i.path[0])] : undefined;
  const described = !isComplex(arg) && typeof arg?.description === 'string' ? arg.description : undefined;
  if (!missing) {
    const what = i.code === 'invalid_type' && described ? ` (${field} is ${described})` : '';
    return `${field}: ${i.message.replace(/^Invalid input: /, '')}${what}${wrappedList(i, given, listed)}`;
  }
  if (isComplex(arg)) return `${field} is required`;
  return `${field} is required (${missing[1]}${described ? `: ${described}` : ''})`;
}

/**
 * For a list given where the argument is an object holding one list (`schema: [...]` for
 * `schema: {fields: [...]}`), how to write it: the commonest wrong shape a model sends.
 */
function wrappedList(i: z.core.$ZodIssue, given: unknown, listed: ListedArguments): string {
  if (i.code !== 'invalid_type' || i.expected !== 'object' || !Array.isArray(given) || i.path.length !== 1) return '';
  const properties = Object.entries((listed[String(i.path[0])] as { properties?: ListedArguments } | undefined)?.properties ?? {});
  const lists = properties.filter(([, p]) => p.type === 'array');
  return lists.length === 1 ? ` (write the list as {"${lists[0]![0]}": [...]})` : '';
}

/** The value at a path of the arguments, whatever its type. */
function valueAtPath(args: unknown, path: readonly PropertyKey[]): unknown {
  let v = args;
  for (const key of path) v = typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[key] : undefined;
  return v;
}

/** Words a model writes for a value that is spelt otherwise here (keys: the value here; the Table field types, the where operators). */
const VALUES_WRITTEN_FOR: Record<string, readonly string[]> = {
  string: ['text', 'str', 'varchar', 'char'],
  integer: ['int', 'bigint', 'int64', 'long'],
  number: ['float', 'double', 'decimal', 'numeric', 'real'],
  boolean: ['bool'],
  datetime: ['timestamp', 'timestamptz'],
  json: ['object', 'array', 'jsonb'],
  // table_query's where operators, as SQL and programming languages write them
  eq: ['=', '==', '===', 'equals', 'is'],
  neq: ['!=', '!==', '<>', 'ne', 'not'],
  gt: ['>'],
  gte: ['>=', 'ge'],
  lt: ['<'],
  lte: ['<=', 'le'],
  ilike: ['like', 'contains', 'matches'],
  isnull: ['null', 'is null'],
};

/** The option `given` most likely meant: the same in another case, a word models write for it, or one a letter or two away. */
function intendedValue(given: string, options: readonly string[]): string | undefined {
  const g = given.toLowerCase();
  return options.find((o) => o.toLowerCase() === g) ?? options.find((o) => VALUES_WRITTEN_FOR[o]?.includes(g)) ?? nearby(g, options);
}

/** Words that name the same action in tool names. */
const SYNONYMS: Record<string, string> = {
  insert: 'create',
  add: 'create',
  new: 'create',
  make: 'create',
  remove: 'delete',
  edit: 'update',
  modify: 'update',
  set: 'update',
  fetch: 'get',
  read: 'get',
  find: 'query',
  search: 'query',
  app: 'apps',
  site: 'apps',
  sites: 'apps',
  tables: 'table',
  records: 'record',
  row: 'record',
  rows: 'record',
};

function words(name: string): Set<string> {
  return new Set(
    name
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean)
      .map((w) => SYNONYMS[w] ?? w),
  );
}

/** Up to three of `names` sharing the most words with `name` (synonyms folded), best first. */
function nearestTools(name: string, names: string[]): string[] {
  const wanted = words(name);
  return names
    .map((n) => {
      const have = words(n);
      let shared = 0;
      for (const w of wanted) if (have.has(w)) shared++;
      return { n, score: shared / Math.max(wanted.size, 1) - have.size * 0.01 };
    })
    .filter((c) => c.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, 3)
    .map((c) => c.n);
}
