/** Reading the service's answers the same way in every tool: JSON body, and what went wrong. */

export interface ServiceAnswer {
  text: string;
  json: Record<string, unknown>;
}

/** The body as text and as JSON (`{}` when it is not JSON). */
export async function readAnswer(response: Response): Promise<ServiceAnswer> {
  const text = await response.text();
  try {
    return { text, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  } catch {
    return { text, json: {} };
  }
}

export interface ServiceFailure {
  /** The service's message, with the fields it names: `name: taken (name: …)`. */
  what: string;
  code?: string;
  /** `details.reason` where the service gives one (a function's failure: `threw`, `timeout`, `sandbox_error`…). */
  reason?: string;
  /** `details.site` of a 404: the app (as the request named it) that is not the caller's. */
  missingSite?: string;
  /** `[HTTP 409 slug_taken]` */
  tag: string;
}

/** What a non-2xx answer says: the error envelope `{error: {code, message, details}}`, or an x402 402 body `{error: reason, message}`. */
export function describeFailure(response: Response, answer: ServiceAnswer): ServiceFailure {
  const { json, text } = answer;
  const err = (typeof json.error === 'string' ? { code: json.error, message: json.message } : (json.error ?? {})) as {
    code?: string;
    message?: string;
    details?: { issues?: { field: string; message: string }[]; reason?: unknown; site?: unknown };
  };
  const message = err.message ?? (text.slice(0, 300) || response.statusText);
  // The issues the message does not already state (a one-issue refusal often says it whole).
  const issues = (err.details?.issues ?? []).filter((i) => !message.includes(i.message)).map((i) => `${i.field}: ${i.message}`);
  const fields = issues.length ? ` (${issues.join('; ')})` : '';
  return {
    what: `${message}${fields}`,
    code: err.code,
    reason: typeof err.details?.reason === 'string' ? err.details.reason : undefined,
    missingSite: response.status === 404 && typeof err.details?.site === 'string' ? err.details.site : undefined,
    tag: `[HTTP ${response.status}${err.code ? ` ${err.code}` : ''}]`,
  };
}
