import { declareDiscoveryExtension, type DiscoveryExtension } from '@x402/extensions/bazaar';
import { z } from 'zod';
import type { AgentAction } from '../../shared/agent-api/action.js';

/**
 * x402 Bazaar discovery (`extensions.bazaar`, `@x402/extensions/bazaar`): what a facilitator catalogs
 * so an agent can find a paid endpoint or tool and call it: the input (JSON Schema and an example),
 * an output hint (JSON Schema and an example), beside the PaymentRequired's description and price.
 * Generated from the one action catalogue, as the routes, the discovery document and the tools are;
 * `validateDiscoveryExtension` accepts each (test/payments/bazaar.test.ts walks the catalogue).
 */

type JsonSchema = Record<string, unknown>;

/** JSON Schema of a zod schema, inlined (a catalogue schema with an id would otherwise be a `$ref` into `$defs`, which breaks once nested). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const {
    $schema: _s,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, { io, unrepresentable: 'any', reused: 'inline', cycles: 'ref' }) as JsonSchema & {
    $defs?: Record<string, JsonSchema>;
  };
  return $defs ? (inlineRefs(rest, $defs) as JsonSchema) : rest;
}

function inlineRefs(node: unknown, defs: Record<string, JsonSchema>, depth = 0): unknown {
  if (Array.isArray(node)) return node.map((n) => inlineRefs(n, defs, depth));
  if (!node || typeof node !== 'object') return node;
  const o = node as JsonSchema;
  const ref = typeof o.$ref === 'string' ? /^#\/\$defs\/(.+)$/.exec(o.$ref)?.[1] : undefined;
  if (ref && defs[ref] && depth < 8) {
    const { $ref: _r, ...siblings } = o;
    return { ...(inlineRefs(defs[ref], defs, depth + 1) as JsonSchema), ...siblings };
  }
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, inlineRefs(v, defs, depth)]));
}

/**
 * A small value a JSON Schema accepts, as the example the extension carries beside it: required fields
 * (and, at the top, the first optional one), one item per array, the first enum value, a minimum, a
 * string of the minimum length; a field's format gets a value of that format.
 */
export function exampleOf(schema: JsonSchema, depth = 0): unknown {
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const union = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  if (union?.length) return exampleOf(union.find((s) => s.type !== 'null') ?? union[0]!, depth);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = ((schema.required ?? []) as string[]).filter((k) => properties[k]);
      // The top level also shows its first optional field (some inputs need one of them: update_app_meta).
      const optional = Object.keys(properties).find((k) => !required.includes(k));
      const shown = depth === 0 && optional ? [...required, optional] : required;
      return Object.fromEntries(shown.map((k) => [k, exampleOf(properties[k]!, depth + 1)]));
    }
    case 'array':
      // One item at least: an example shows what an item is.
      return Array.from({ length: Math.min(Math.max(1, Number(schema.minItems ?? 0)), Number(schema.maxItems ?? 1)) }, () =>
        exampleOf((schema.items ?? {}) as JsonSchema, depth + 1),
      );
    case 'integer':
    case 'number': {
      // 1 where nothing bounds it: sizes and counts are positive.
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : 1;
      return typeof schema.maximum === 'number' ? Math.min(min, schema.maximum) : min;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'string':
      return stringExample(schema);
    default:
      return {};
  }
}

function stringExample(schema: JsonSchema): string {
  if (schema.format === 'uri' || schema.format === 'url') return 'https://example.com/';
  if (schema.format === 'date-time') return '2026-01-01T00:00:00.000Z';
  if (schema.format === 'email') return 'agent@example.com';
  const length = Math.max(1, Number(schema.minLength ?? 1));
  return 'a'.repeat(length);
}

/** The object schema's `properties` and `required`, as the extension's `inputSchema` takes them. */
function fieldsOf(schema: JsonSchema): JsonSchema {
  return { properties: schema.properties ?? {}, ...(Array.isArray(schema.required) && schema.required.length ? { required: schema.required } : {}) };
}

function outputHintOf(action: AgentAction): { example: unknown; schema: JsonSchema } {
  const schema = jsonSchemaOf(action.output, 'output');
  return { example: exampleOf(schema), schema: fieldsOf(schema) };
}

// Built once per action (zod → JSON Schema is the cost); a 402 only adds its path parameters.
const httpCache = new Map<string, DiscoveryExtension>();
const paramsCache = new Map<string, JsonSchema>();

/**
 * The HTTP declaration of an action (x402 v2 `PAYMENT-REQUIRED` `extensions.bazaar`), completed as
 * the library's resource-server extension completes it at request time: the method, and the route
 * template with this request's path parameters.
 */
export function httpDiscoveryOf(action: AgentAction, pathParams: Record<string, string>): Record<string, DiscoveryExtension> {
  let declared = httpCache.get(action.name);
  if (!declared) {
    const body = jsonSchemaOf(action.input, 'input');
    const output = outputHintOf(action);
    declared = (
      action.method === 'POST' || action.method === 'PATCH'
        ? declareDiscoveryExtension({ bodyType: 'json', input: exampleOf(body) as Record<string, unknown>, inputSchema: fieldsOf(body), output })
        : declareDiscoveryExtension({ input: {}, inputSchema: { properties: {} }, output })
    ).bazaar!;
    httpCache.set(action.name, declared);
  }
  const params = paramsCache.get(action.name) ?? jsonSchemaOf(action.params, 'input');
  paramsCache.set(action.name, params);
  const hasParams = Object.keys((params.properties ?? {}) as object).length > 0;
  const schema = declared.schema as { properties: { input: { properties: JsonSchema; required: string[] } } & JsonSchema } & JsonSchema;
  const input = schema.properties.input;
  return {
    bazaar: {
      ...declared,
      ...(hasParams ? { routeTemplate: action.path } : {}),
      info: { ...declared.info, input: { ...declared.info.input, method: action.method, ...(hasParams ? { pathParams } : {}) } },
      schema: {
        ...schema,
        properties: {
          ...schema.properties,
          input: {
            ...input,
            properties: {
              ...input.properties,
              method: { type: 'string', enum: [action.method] },
              ...(hasParams ? { pathParams: { type: 'object', ...fieldsOf(params) } } : {}),
            },
            required: input.required.includes('method') ? input.required : [...input.required, 'method'],
          },
        },
      },
    } as DiscoveryExtension,
  };
}

/**
 * The x402 v1 form (the `outputSchema` of the v1 402 body's requirement), which v1 catalogs read
 * (`extractDiscoveryInfoV1`): method, body type and fields, and the output schema.
 */
export function v1OutputSchemaOf(action: AgentAction): Record<string, unknown> {
  const body = action.method === 'POST' || action.method === 'PATCH';
  const output = jsonSchemaOf(action.output, 'output');
  return {
    input: {
      type: 'http',
      method: action.method,
      discoverable: true,
      ...(body ? { bodyType: 'json', bodyFields: jsonSchemaOf(action.input, 'input').properties ?? {} } : {}),
    },
    output,
  };
}

/** The MCP tool's declaration (a hosted endpoint's PaymentRequired): its name, description and input schema as tools/list shows them. */
export function mcpDiscoveryOf(action: AgentAction, tool: { name: string; description: string; inputSchema: JsonSchema }): Record<string, DiscoveryExtension> {
  return declareDiscoveryExtension({
    toolName: tool.name,
    description: tool.description,
    transport: 'streamable-http',
    inputSchema: tool.inputSchema,
    example: exampleOf(tool.inputSchema) as Record<string, unknown>,
    output: outputHintOf(action),
  });
}
