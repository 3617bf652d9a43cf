/** A JSON Schema node of the generated OpenAPI document, as far as this pass reads it. */
interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  additionalProperties?: unknown;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
}

interface Operation {
  requestBody?: { content?: Record<string, { schema?: SchemaNode }> };
  responses?: Record<string, { content?: Record<string, { schema?: SchemaNode }> }>;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, SchemaNode> };
}

/**
 * Says in the OpenAPI document what the service does (shared/undeclared-fields.ts): the object
 * schemas of JSON request bodies get `additionalProperties: false`, through nested objects, arrays
 * and nullable values, as the runtime check walks them. An object that already says what it does
 * with other fields is left as it is, so is a union (not checked at run time), and so is a component
 * a response uses too (a response may gain fields). Changes `doc` in place and returns it.
 */
export function closeRequestBodies<T extends object>(doc: T): T {
  const d = doc as OpenApiDocument;
  const components = d.components?.schemas ?? {};
  const operations = Object.values(d.paths ?? {}).flatMap((item) => Object.values(item));
  const inResponses = new Set<string>();
  for (const op of operations)
    for (const response of Object.values(op.responses ?? {}))
      for (const media of Object.values(response.content ?? {})) collectRefs(media.schema, components, inResponses);
  const closed = new Set<string>();
  const close = (node: SchemaNode | undefined): void => {
    if (!node) return;
    const name = componentName(node);
    if (name !== undefined) {
      if (inResponses.has(name) || closed.has(name)) return;
      closed.add(name);
      close(components[name]);
      return;
    }
    const nonNull = node.anyOf?.filter((n) => n.type !== 'null');
    if (nonNull?.length === 1 && node.anyOf!.length === 2) close(nonNull[0]);
    if (node.properties && node.additionalProperties === undefined) node.additionalProperties = false;
    for (const property of Object.values(node.properties ?? {})) close(property);
    close(node.items);
  };
  for (const op of operations) close(op.requestBody?.content?.['application/json']?.schema);
  return doc;
}

function componentName(node: SchemaNode): string | undefined {
  return node.$ref?.startsWith('#/components/schemas/') ? node.$ref.slice('#/components/schemas/'.length) : undefined;
}

/** Every component `node` uses, at any depth. */
function collectRefs(node: unknown, components: Record<string, SchemaNode>, into: Set<string>): void {
  if (node === null || typeof node !== 'object') return;
  const name = componentName(node as SchemaNode);
  if (name !== undefined) {
    if (into.has(name)) return;
    into.add(name);
    collectRefs(components[name], components, into);
    return;
  }
  for (const value of Object.values(node)) collectRefs(value, components, into);
}
