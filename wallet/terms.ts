import { getAddress, isAddress } from 'viem';
import { z } from 'zod';
import { WalletError } from './errors.js';

/** USDC as the x402 libraries sign for it (EIP-712 domain name/version, contract address). */
export const USDC_BY_CHAIN: Record<number, { asset: `0x${string}`; name: string; version: string; v1Network: string }> = {
  8453: { asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', name: 'USD Coin', version: '2', v1Network: 'base' },
  84532: { asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', name: 'USDC', version: '2', v1Network: 'base-sepolia' },
};

/** The part of `GET /api/x402` the wallet relies on; unknown fields are ignored. */
const DiscoverySchema = z.object({
  network: z.string(),
  recipient: z.string().refine((a) => isAddress(a, { strict: false }), 'an address'),
  currency: z.string(),
  /** Optional extras a deployment may advertise (the dev chain's RPC URL, the asset). */
  rpcUrl: z.string().url().optional(),
  asset: z.string().optional(),
  endpoints: z.array(z.object({ action: z.string(), method: z.string(), path: z.string(), price: z.string() }).passthrough()).optional(),
});
export type Discovery = z.infer<typeof DiscoverySchema>;

/**
 * The only payment terms the wallet will sign: taken from the configured service's own discovery
 * document, never from a 402 response.
 */
export interface PaymentTerms {
  chainId: number;
  /** CAIP-2 (`eip155:8453`) and the v1 name (`base`) of the same chain. */
  caip2: string;
  v1Network: string;
  asset: `0x${string}`;
  domainName: string;
  domainVersion: string;
  recipient: `0x${string}`;
  rpcUrl?: string;
  discovery: Discovery;
}

export function termsFromDiscovery(doc: unknown): PaymentTerms {
  const parsed = DiscoverySchema.safeParse(doc);
  if (!parsed.success)
    throw new WalletError(
      'service_unreachable',
      'The service discovery document (GET /api/x402) does not name a network, recipient and currency; nothing was paid. Check SVC_URL points at an svc service.',
    );
  const d = parsed.data;
  const m = /^eip155:(\d+)$/.exec(d.network);
  const chainId = m ? Number(m[1]) : NaN;
  const usdc = USDC_BY_CHAIN[chainId];
  if (!usdc || d.currency.toUpperCase() !== 'USDC') {
    throw new WalletError(
      'terms_refused',
      `The service asks for ${d.currency} on ${d.network}; this wallet only pays USDC on Base (eip155:8453) or Base Sepolia (eip155:84532). Nothing was paid.`,
    );
  }
  if (d.asset && getAddress(d.asset) !== getAddress(usdc.asset)) {
    throw new WalletError('terms_refused', `The service names asset ${d.asset}, which is not USDC on ${d.network}; nothing was paid.`);
  }
  return {
    chainId,
    caip2: d.network,
    v1Network: usdc.v1Network,
    asset: usdc.asset,
    domainName: usdc.name,
    domainVersion: usdc.version,
    recipient: getAddress(d.recipient),
    rpcUrl: d.rpcUrl,
    discovery: d,
  };
}

export async function fetchDiscovery(serviceUrl: string, fetchImpl: typeof fetch = fetch): Promise<unknown> {
  let res: Response;
  try {
    res = await fetchImpl(`${serviceUrl}/api/x402`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
  } catch (e) {
    throw new WalletError(
      'service_unreachable',
      `The service at ${serviceUrl} did not answer (${(e as Error).message}); nothing was paid. Start it or fix SVC_URL.`,
    );
  }
  if (!res.ok)
    throw new WalletError(
      'service_unreachable',
      `GET ${serviceUrl}/api/x402 answered ${res.status}; nothing was paid. Check SVC_URL points at an svc service.`,
    );
  return res.json();
}
