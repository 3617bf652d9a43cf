import fc from 'fast-check';

/** A JSON Schema node as the OpenAPI and discovery documents publish it. */
export type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  $ref?: string;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
};

/** Strings that broke services before: NUL, control characters, redirects, traversal, injections, lone surrogates, size. */
export const HOSTILE_STRINGS = [
  '\u0000',
  'a\u0000b',
  '\t',
  '\r\n',
  '\n',
  '\u001b[31m',
  '%00',
  '%2F%09%2Fevil.com',
  '/\t/evil.com',
  '//evil.com',
  '/\\evil.com',
  'https://evil.com/',
  'javascript:alert(1)',
  '../../etc/passwd',
  '\ud800',
  "' or 1=1 --",
  '{"$gt":""}',
  '<script>alert(1)</script>',
  '🙂',
  '',
  ' ',
  'x'.repeat(70_000),
] as const;

export const hostileString = (): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map((s) => `${s}\u0000${s}`) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  );

const numbers = (): fc.Arbitrary<number> =>
  fc.oneof(
    fc.integer(),
    fc.constantFrom(0, -1, 1, 2 ** 31, -(2 ** 31), 2 ** 53, Number.MAX_SAFE_INTEGER, 1e308, -1e308, 0.5),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
  );

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  let s = schema;
  for (let i = 0; i < 8 && s.$ref; i++) {
    const target = s.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part], root);
    s = (target as JsonSchema | undefined) ?? {};
  }
  return s;
}

/**
 * Mostly the right shape with hostile leaves: what a careless or hostile client sends. Now and then a
 * whole value of the wrong type, a required field dropped, or an unknown field added.
 */
export function arbitraryFor(schema: JsonSchema, root: JsonSchema = schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema, root);
  if (depth > 4) return fc.jsonValue({ maxDepth: 1 });
  const shaped = shapedArbitrary(s, root, depth);
  return fc.oneof({ weight: 6, arbitrary: shaped }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
}

function shapedArbitrary(s: JsonSchema, root: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const alternatives = s.anyOf ?? s.oneOf;
  if (alternatives?.length) return fc.oneof(...alternatives.map((a) => arbitraryFor(a, root, depth + 1)));
  if (s.allOf?.length) return arbitraryFor(s.allOf[0]!, root, depth + 1);
  if (s.const !== undefined) return fc.oneof(fc.constant(s.const), hostileString());
  if (s.enum?.length) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...s.enum) }, { weight: 1, arbitrary: hostileString() });
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object':
      return objectArbitrary(s, root, depth);
    case 'array':
      return fc.array(s.items ? arbitraryFor(s.items, root, depth + 1) : fc.jsonValue({ maxDepth: 1 }), { maxLength: 4 });
    case 'string':
      return hostileString();
    case 'integer':
    case 'number':
      return numbers();
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return s.properties ? objectArbitrary(s, root, depth) : fc.jsonValue({ maxDepth: 2 });
  }
}

function objectArbitrary(s: JsonSchema, root: JsonSchema, depth: number): fc.Arbitrary<unknown> {
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const fields = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, arbitraryFor(v, root, depth + 1)]));
  const optional = Object.keys(props).filter((k) => !required.has(k));
  return fc.record(fields, { requiredKeys: [...required].filter((k) => k in props) }).chain((value) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.constant(value) },
      // A required field missing, or a field nobody asked for.
      { weight: 1, arbitrary: fc.constantFrom(...(required.size ? [...required] : ['_'])).map((k) => omit(value as object, k)) },
      { weight: 1, arbitrary: hostileString().map((v) => ({ ...(value as object), [`x${optional.length}`]: v })) },
    ),
  );
}

function omit(value: object, key: string): object {
  const { [key]: _dropped, ...rest } = value as Record<string, unknown>;
  return rest;
}
