/** The Account API scope catalogue (spec section 5). Order is the order shown to people. */
export const SCOPES = [
  'svc.publish',
  'svc.sites.read',
  'svc.sites.write',
  'svc.data.read',
  'svc.data.write',
  'svc.usage.read',
  'svc.functions.read',
  'svc.functions.write',
  'svc.functions.invoke',
] as const;

export type Scope = (typeof SCOPES)[number];

export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'svc.publish': 'Publish new HTML sites',
  'svc.sites.read': 'List sites and read their details and content',
  'svc.sites.write': 'Change and delete sites',
  'svc.data.read': 'List tables and datasets of sites',
  'svc.data.write': 'Create tables and write their records',
  'svc.usage.read': 'Read usage and limits',
  'svc.functions.read': 'List and read functions',
  'svc.functions.write': 'Create, change, publish and delete functions',
  'svc.functions.invoke': 'Invoke functions shared with svc users',
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses a comma- or space-separated scope list; throws naming the first unknown scope. */
export function parseScopeList(text: string): Scope[] {
  const parts = text.split(/[\s,]+/).filter(Boolean);
  const unknown = parts.filter((p) => !isScope(p));
  if (unknown.length) throw new Error(`unknown scope(s): ${unknown.join(', ')} (known: ${SCOPES.join(', ')})`);
  return [...new Set(parts as Scope[])];
}
