import type { Harness } from '../helpers/harness.js';

/** The admin token the operator tests start their harness with (`startHarness(…, { adminToken })`). */
export const ADMIN_TOKEN = 'test-admin-token';

/** One operation of the operator admin endpoint (what the CLI uses while the service runs). */
export async function callAdmin(h: Harness, operation: string, input: unknown): Promise<{ status: number; body: any }> {
  const res = await h.fetch(`/_admin/${operation}`, { method: 'POST', json: input, headers: { 'x-svc-admin-token': ADMIN_TOKEN } });
  return { status: res.status, body: await res.json() };
}
