/**
 * The anonymous surfaces limited per client address (docs/public-operation.md). Each counts the
 * requests one address makes in a minute:
 *   - `agent`: every request to the Agent API (`/api/x402…`): its free actions and unpaid quotes;
 *   - `mcp-x402`: POSTs to the hosted wallet MCP endpoint `/mcp/x402`;
 *   - `table-read` / `table-write`: Table API GETs / POST, PATCH, PUT and DELETE;
 *   - `invoke`: `POST /api/v1/functions/invoke/:slug`;
 *   - `signin`, `signup`, `abuse`: the dashboard's sign-in and sign-up forms, the public report form.
 */
export const ADDRESS_SURFACES = ['agent', 'mcp-x402', 'table-read', 'table-write', 'invoke', 'signin', 'signup', 'abuse'] as const;
export type AddressSurface = (typeof ADDRESS_SURFACES)[number];
export type AddressLimits = Record<AddressSurface, number>;

/** Requests per address per minute; 0 turns a surface's limit off. */
export const DEFAULT_ADDRESS_LIMITS: AddressLimits = {
  agent: 300,
  'mcp-x402': 300,
  'table-read': 1200,
  'table-write': 120,
  invoke: 300,
  signin: 20,
  signup: 20,
  abuse: 5,
};

/** `SVC_ADDRESS_LIMITS`, e.g. `table-read=5000,signup=0`: the defaults with the surfaces named changed. */
export function parseAddressLimits(value: string | undefined): AddressLimits {
  const limits = { ...DEFAULT_ADDRESS_LIMITS };
  if (!value?.trim()) return limits;
  for (const part of value.split(',')) {
    const [name, count, ...rest] = part.split('=').map((s) => s.trim());
    if (!(ADDRESS_SURFACES as readonly string[]).includes(name ?? '') || rest.length || !/^\d+$/.test(count ?? ''))
      throw new Error(
        `invalid configuration:\n  SVC_ADDRESS_LIMITS: "${part.trim()}" is not <surface>=<requests per minute> (surfaces: ${ADDRESS_SURFACES.join(', ')}; 0 = off)`,
      );
    limits[name as AddressSurface] = Number(count);
  }
  return limits;
}
