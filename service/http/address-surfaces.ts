import { ADDRESS_SURFACES, type AddressLimits, type AddressSurface } from '../kernel/config.js';

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
