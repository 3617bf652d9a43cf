import { PAYMENT_HEADERS } from '../../shared/agent-api/network.js';

/** Request headers browsers must be allowed to send (x402-fetch also sends Access-Control-Expose-Headers as a request header). */
export const PAYMENT_REQUEST_HEADERS = [PAYMENT_HEADERS.v1Request, PAYMENT_HEADERS.v2Request, PAYMENT_HEADERS.signInWithX, 'Access-Control-Expose-Headers'];
/** Response headers browsers must be allowed to read. */
export const PAYMENT_RESPONSE_HEADERS = [PAYMENT_HEADERS.v1Response, PAYMENT_HEADERS.v2Response, PAYMENT_HEADERS.v2Required, 'X-Svc-Replayed'];
