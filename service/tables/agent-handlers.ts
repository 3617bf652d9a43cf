import { createTableApi, insertTableRecords } from '../../shared/agent-api/actions/tables.js';
import type { TouchedApp } from '../agent/handler.js';
import { handlerFor, type AnyAgentHandler } from '../agent/typed-handler.js';
import { AppError } from '../kernel/app-error.js';
import { getWalletApp, type SiteRow } from '../sites/sites.js';
import { assertSiteActive } from '../sites/suspension.js';
import { normaliseRecords } from './records.js';
import { createTable, getTableById, insertRecords, parseTableSchema, toTableView, type TableRow } from './tables.js';

const touched = (site: SiteRow): TouchedApp => ({ id: site.id, slug: site.slug, visibility: site.visibility });

/**
 * x402.create_table_api. `check` (free) proves the wallet owns the app and validates the schema,
 * so a bad call costs nothing; `run` creates the table inside the paid transaction.
 */
export const createTableApiHandler = handlerFor<typeof createTableApi, SiteRow>(createTableApi, {
  async check({ deps, wallet, params, input }) {
    const site = await getWalletApp(deps.db, wallet, params.siteId);
    parseTableSchema(input.schema);
    return site;
  },
  async run({ deps, input, tx, state: site }) {
    const { table, writeKey } = await createTable(deps, site, { ...input, kind: 'table' }, tx);
    const view = toTableView(deps.config, site, table);
    return {
      result: {
        table: {
          id: view.id,
          slug: view.slug,
          name: view.name,
          url: view.url,
          pathUrl: view.pathUrl,
          writeKey,
          requireReadKey: view.requireReadKey,
          publicInsert: view.publicInsert,
          methods: view.methods,
          schema: view.schema,
        },
      },
      app: touched(site),
    };
  },
});

/**
 * x402.insert_table_records. `check` proves the wallet owns the table's app (another wallet's table
 * is a 404, like a missing one), that it is a writable table (datasets are read-only: 405), and
 * validates every record, all before payment.
 */
export const insertTableRecordsHandler = handlerFor<typeof insertTableRecords, { site: SiteRow; table: TableRow }>(insertTableRecords, {
  async check({ deps, wallet, params, input }) {
    const found = await getTableById(deps, params.tableId);
    if (!found || found.site.ownerWallet === null || found.site.ownerWallet !== wallet.toLowerCase()) {
      throw new AppError('not_found', `table ${params.tableId} not found`);
    }
    assertSiteActive(found.site);
    if (found.table.kind !== 'table') throw new AppError('method_not_allowed', `${params.tableId} is a dataset; datasets are read-only`);
    normaliseRecords(found.table.schema, input.records);
    return found;
  },
  async run({ deps, input, tx, state }) {
    const records = await insertRecords(deps, state.table, input.records, tx);
    return { result: { inserted: records.length, ids: records.map((r) => r.id) }, app: touched(state.site) };
  },
});

export const tableAgentHandlers: Record<string, AnyAgentHandler> = {
  [createTableApi.name]: createTableApiHandler,
  [insertTableRecords.name]: insertTableRecordsHandler,
};
