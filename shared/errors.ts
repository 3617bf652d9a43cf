import { z } from 'zod';

/**
 * Every error the service answers with has one of these codes. The HTTP status is derived from the
 * code here and nowhere else, so the service, the OpenAPI document and the MCP tools agree.
 */
export const ERROR_STATUS = {
  bad_request: 400,
  validation_failed: 400,
  data_file_invalid: 400,
  /** The bytes an upload URL was made for have not arrived (finalize or convert before the PUT): upload, then call again. */
  not_uploaded: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  insufficient_scope: 403,
  /** The account is suspended by the operator: its keys, OAuth tokens and sessions are refused (the message gives the reason). */
  account_suspended: 403,
  /** The wallet is blocked by the operator: its Agent API calls are refused before any payment is looked at. */
  wallet_blocked: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  slug_taken: 409,
  function_has_secrets: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  quota_exceeded: 429,
  /** The site is suspended by the operator (a takedown): its pages, files and Table API answer 451; nothing of it is deleted. */
  site_suspended: 451,
  internal: 500,
  payment_settlement_failed: 502,
  /** The Function itself failed (threw, timed out, ran out of memory, returned an invalid response). */
  function_failed: 502,
  service_unavailable: 503,
  /** A Table API query ran past the statement timeout. */
  query_timeout: 503,
  /** The blob store is full (disk or volume quota): nothing of the request was kept. */
  insufficient_storage: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/** The one error envelope: `{ ok: false, error: { code, message, details?, requestId? } }`. */
export const ErrorBodySchema = z
  .object({
    ok: z.literal(false),
    error: z.object({
      code: z.enum(ERROR_CODES).describe('Stable machine-readable code; the HTTP status follows from it'),
      message: z.string().describe('A sentence for people and agents: what failed and what to do'),
      details: z.unknown().optional().describe('Structured context, e.g. the invalid fields'),
      requestId: z.string().optional().describe('Echoes the X-Request-Id response header'),
    }),
  })
  .meta({ id: 'Error' });

export type ErrorBody = z.infer<typeof ErrorBodySchema>;
