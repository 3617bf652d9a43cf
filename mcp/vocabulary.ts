import { z } from 'zod';

/**
 * One vocabulary for the model. A hosted site is an **app**; every tool takes and every result gives
 * its id as `appId` and its slug (the host label) as `appName`, and every app carries `url` (host form)
 * and `pathUrl` (path form on the service host, which any HTTP client resolves). The service's own
 * APIs say `siteId`, `site`, `slug`, `name`: the names are translated here, at the MCP edge, and
 * nowhere else.
 */

/** Tool argument → the service's parameter name, per Agent API action (path params and body). */
const EVERY_ACTION: Record<string, string> = { appId: 'siteId' };
export const ACTION_ARG_NAMES: Record<string, Record<string, string>> = {
  '*': EVERY_ACTION,
  'x402.create_app_from_html': { appName: 'name' },
};

/**
 * A tool argument's schema in the tools' vocabulary: the service describes its `siteId` for HTTP
 * ("Site id", "Site identifier"); a tool's `appId` is described as the app id it is.
 */
export function asToolArgSchema(arg: string, schema: z.core.$ZodType): z.core.$ZodType {
  return arg === 'appId' && schema instanceof z.ZodType ? schema.describe('App id (appId in results)') : schema;
}

/** The service's name of a tool argument of `action`. */
export function serviceArgName(action: string, arg: string): string {
  return ACTION_ARG_NAMES[action]?.[arg] ?? EVERY_ACTION[arg] ?? arg;
}

/** The tool's name of a service parameter of `action` (the inverse of serviceArgName). */
export function toolArgName(action: string, param: string): string {
  for (const map of [ACTION_ARG_NAMES[action] ?? {}, EVERY_ACTION]) {
    for (const [tool, service] of Object.entries(map)) if (service === param) return tool;
  }
  return param;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An Account API site object → an app in the tools' vocabulary. */
function siteAsApp(site: Record<string, unknown>): Record<string, unknown> {
  const { id, slug, ...rest } = site;
  return { appId: id, appName: slug, ...rest };
}

/**
 * An Account API answer in the tools' vocabulary: `site`/`sites` become `app`/`apps` with
 * appId/appName, and a top-level `siteId` becomes `appId`. Other fields pass through unchanged.
 */
export function accountAnswerAsApps(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'site' && isRecord(v)) out.app = siteAsApp(v);
    else if (k === 'sites' && Array.isArray(v)) out.apps = v.map((s) => (isRecord(s) ? siteAsApp(s) : s));
    else if (k === 'siteId') out.appId = v;
    else out[k] = v;
  }
  return out;
}
