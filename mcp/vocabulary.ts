import { z } from 'zod';

/**
 * One vocabulary for the model. A hosted site is an **app**; every result gives its id as `appId` and
 * its slug (the host label) as `appName`, every tool that manages an app takes it as `appId` (its id or
 * its name: the service resolves both), and every app carries `url` (host form) and `pathUrl` (path
 * form on the service host, which any HTTP client resolves). A Table's and a Function's ids are
 * `tableId` and `functionId`, in results as in arguments; a converted data file is a `dataset` with a
 * `datasetId` (the Agent API's `asset`). The service's own APIs say `siteId`,
 * `site`, `slug`, `name`, `id`: the names are translated here, at the MCP edge, and nowhere else.
 */

/** Tool argument → the service's parameter name, per Agent API action (path params and body). */
const EVERY_ACTION: Record<string, string> = { appId: 'siteId' };
export const ACTION_ARG_NAMES: Record<string, Record<string, string>> = {
  '*': EVERY_ACTION,
  'x402.create_app_from_html': { appName: 'name' },
};

/** How every tool describes its `appId`: the service resolves an app's id or its name alike. */
export const APP_ID_DESCRIPTION = 'App id or name (appId or appName in results)';

/** How a tool describes an id argument: the field of the results that holds it. */
const ID_ARG_DESCRIPTIONS: Record<string, string> = {
  appId: APP_ID_DESCRIPTION,
  tableId: 'Table id (tableId in results)',
  functionId: 'Function id or slug (functionId or slug in results)',
};

/**
 * A tool argument's schema in the tools' vocabulary: the service describes its `siteId` for HTTP
 * ("Site id or name"); a tool's `appId`, `tableId`, `functionId` name the result field they come from.
 */
export function asToolArgSchema(arg: string, schema: z.core.$ZodType): z.core.$ZodType {
  const description = ID_ARG_DESCRIPTIONS[arg];
  return description && schema instanceof z.ZodType ? schema.describe(description) : schema;
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
 * A Table's or a Function's object with its `id` named as the tools take it (`tableId`,
 * `functionId`), and the app it belongs to (a Table's `siteId`) as `appId`.
 */
function withIdAs(idName: string): (object: Record<string, unknown>) => Record<string, unknown> {
  return ({ id, siteId, ...rest }) => ({ [idName]: id, ...(siteId === undefined ? {} : { appId: siteId }), ...rest });
}

/** Answer field → [its name in the tools' vocabulary, the translation of one object]. */
const OBJECTS: Record<string, [string, (object: Record<string, unknown>) => Record<string, unknown>]> = {
  site: ['app', siteAsApp],
  sites: ['apps', siteAsApp],
  table: ['table', withIdAs('tableId')],
  tables: ['tables', withIdAs('tableId')],
  function: ['function', withIdAs('functionId')],
  functions: ['functions', withIdAs('functionId')],
  // A converted data file: the Agent API's `asset` (spec), the Account API's `dataset(s)`.
  asset: ['dataset', withIdAs('datasetId')],
  dataset: ['dataset', withIdAs('datasetId')],
  datasets: ['datasets', withIdAs('datasetId')],
};

/**
 * A service answer (Agent API or Account API) in the tools' vocabulary: `site`/`sites` become
 * `app`/`apps` with appId/appName, a top-level `siteId` becomes `appId`, a Table's or a Function's
 * `id` becomes the `tableId`/`functionId` the tools take, and an `asset` a `dataset` with its
 * `datasetId`. Other fields pass through.
 */
export function answerInToolWords(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    const object = OBJECTS[k];
    if (object && isRecord(v)) out[object[0]] = object[1](v);
    else if (object && Array.isArray(v)) out[object[0]] = v.map((o) => (isRecord(o) ? object[1](o) : o));
    else if (k === 'siteId') out.appId = v;
    else out[k] = v;
  }
  return out;
}
