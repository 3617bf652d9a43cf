import { USDC_EIP712_NAME, USDC_EIP712_VERSION, X402_NETWORK_V1 } from '../../shared/agent-api/network.js';
import type { Facilitator, FacilitatorSettleResult, FacilitatorVerifyResult, SupportedKind, VerifiedPayment } from './facilitator.js';

export interface RemoteFacilitatorOptions {
  url: string;
  /** Sent as the Authorization header when set. */
  authorization?: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
}

/**
 * A standard x402 facilitator over HTTP (`POST /verify`, `POST /settle`, `GET /supported`). Whatever
 * generation the client paid with, the facilitator gets the v1 form (`network: "base"`): the signed
 * EIP-3009 authorization is the same object, and every facilitator speaks v1.
 */
export class RemoteFacilitator implements Facilitator {
  readonly kind = 'remote' as const;
  private readonly fetch: typeof fetch;
  constructor(private readonly options: RemoteFacilitatorOptions) {
    this.fetch = options.fetch ?? fetch;
  }

  private body(p: VerifiedPayment) {
    return {
      x402Version: 1,
      paymentPayload: { x402Version: 1, scheme: 'exact', network: X402_NETWORK_V1, payload: { signature: p.signature, authorization: p.authorization } },
      paymentRequirements: {
        scheme: 'exact',
        network: X402_NETWORK_V1,
        maxAmountRequired: p.amount.toString(),
        resource: p.resource,
        description: p.description,
        mimeType: 'application/json',
        payTo: p.payTo,
        maxTimeoutSeconds: p.maxTimeoutSeconds,
        asset: p.asset,
        extra: { name: USDC_EIP712_NAME, version: USDC_EIP712_VERSION },
      },
    };
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.options.authorization) headers.authorization = this.options.authorization;
    const res = await this.fetch(`${this.options.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`facilitator ${path} answered ${res.status} with non-JSON: ${text.slice(0, 200)}`);
    }
    if (!res.ok && !(json && typeof json === 'object' && ('isValid' in json || 'success' in json))) {
      throw new Error(`facilitator ${path} answered ${res.status}: ${text.slice(0, 200)}`);
    }
    return json as T;
  }

  async verify(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    const r = await this.call<{ isValid: boolean; invalidReason?: string }>('POST', '/verify', this.body(p));
    return { isValid: r.isValid === true, invalidReason: r.invalidReason };
  }

  /** The facilitator checks smart-account signatures in /verify; only a signature refusal counts here. */
  async verifySignature(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    const r = await this.verify(p);
    if (r.isValid || !/signature|factory/i.test(r.invalidReason ?? '')) return { isValid: true };
    return r;
  }

  async settle(p: VerifiedPayment, onSubmitted?: (txHash: string) => void): Promise<FacilitatorSettleResult> {
    const r = await this.call<{ success: boolean; transaction?: string; errorReason?: string }>('POST', '/settle', this.body(p));
    if (r.success && r.transaction) onSubmitted?.(r.transaction);
    return { success: r.success === true && Boolean(r.transaction), transaction: r.transaction ?? '', errorReason: r.errorReason };
  }

  async ping(): Promise<void> {
    await this.supported();
  }

  async supported(): Promise<{ kinds: SupportedKind[] }> {
    return this.call<{ kinds: SupportedKind[] }>('GET', '/supported');
  }

  async authorizationUsed(): Promise<undefined> {
    return undefined;
  }

  async close(): Promise<void> {}
}
