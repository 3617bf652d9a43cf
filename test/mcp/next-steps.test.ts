import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountHostedMcp } from '../../cli/hosted-mcp.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { call, connectHttp, text } from './helpers.js';

// Answers that say what to do next. A tool that exists in svc but not in this session answers why and
// what to do instead (not the SDK's bare "Tool … not found"), and is never listed: it costs a model no
// tokens. A Table or record that is not there names the tools of this session that find the right one;
// a function's refusal says whether to publish it or change its code.
let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite', {}, { mount: (app, deps) => mountHostedMcp(app, deps) });
}, 60_000);
afterAll(async () => h?.close());

async function hosted(path: string, key?: string): Promise<Client> {
  const client = new Client({ name: 'next-steps-test', version: '1.0.0' });
  const headers: Record<string, string> = key ? { authorization: `Bearer ${key}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}${path}`), { requestInit: { headers } }));
  return client;
}

async function expectUnavailable(client: Client, name: string, why: RegExp): Promise<void> {
  expect((await client.listTools()).tools.map((t) => t.name)).not.toContain(name);
  const r = await call(client, name, {});
  expect(r.isError, name).toBe(true);
  expect(text(r)).toMatch(why);
  expect(text(r)).not.toMatch(/not found/);
}

describe('answers that say what to do next', () => {
  it('on /mcp: the local wallet and file tools point at svc-mcp and at what to call here; a scope not granted is named', async () => {
    const client = await hosted('/mcp', (await h.account(['svc.sites.read'])).key);
    try {
      await expectUnavailable(client, 'wallet_status', /^wallet_status describes the wallet of svc-mcp.*holds no wallet.*_meta\["x402\/payment"\]/);
      await expectUnavailable(client, 'quote', /^quote describes the wallet of svc-mcp/);
      await expectUnavailable(client, 'list_receipts', /^list_receipts describes the wallet of svc-mcp/);
      // The command names the package this service serves (test/e2e/svc-mcp-package.test.ts runs it):
      // `npx svc-mcp` alone would fetch whatever the registry holds under that name.
      await expectUnavailable(
        client,
        'deploy_site',
        /^deploy_site reads files on your disk.*: SVC_URL=\S+ npx -y -p \S+\/mcp\/svc-mcp-[\d.]+-[0-9a-f]{12}\.tgz svc-mcp\).*Here: create_app_from_html, then update_app_file/,
      );
      await expectUnavailable(client, 'upload_dataset', /^upload_dataset reads files on your disk.*create_data_file_upload_url.*convert_data_file_to_api/);
      await expectUnavailable(client, 'account_publish_app', /^account_publish_app needs the scope svc\.publish, which this credential was not granted/);
      // What the scope allows is there and works.
      expect((await call(client, 'account_list_apps', {})).isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });

  it('account_publish_app takes index.html among its files, as deploy_site does, and says what it needs without one', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const files = [
        { path: 'index.html', content: '<h1>All in files</h1><script src="app.js"></script>' },
        { path: 'app.js', content: 'console.log(1)' },
      ];
      const none = await call(client, 'account_publish_app', { requestId: 'files-only-0', appName: 'files-only', files: files.slice(1) });
      expect([none.isError, text(none)]).toEqual([
        true,
        'account_publish_app needs html (the HTML document served as index.html), or index.html in files. Nothing was done.',
      ]);
      const r = await call(client, 'account_publish_app', { requestId: 'files-only-1', appName: 'files-only', files });
      expect(r.isError, text(r)).toBeFalsy();
      const app = (r.structuredContent as { app: { appName: string; pathUrl: string } }).app;
      expect(app.appName).toBe('files-only');
      expect(await (await fetch(`${app.pathUrl}`)).text()).toBe('<h1>All in files</h1><script src="app.js"></script>');
      expect(await (await fetch(`${app.pathUrl}app.js`)).text()).toBe('console.log(1)');
      const read = await call(client, 'account_read_app_files', { appId: 'files-only' });
      expect((read.structuredContent as { files: { path: string }[] }).files.map((f) => f.path).sort()).toEqual(['app.js', 'index.html']);
    } finally {
      await client.close();
    }
  });

  it('a tool name that does not exist answers the nearest tools of this session', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const guessed = await call(client, 'create_table', { name: 'Todos' });
      expect(guessed.isError).toBe(true);
      expect(text(guessed)).toMatch(/^There is no tool named create_table in this session\. Nearest: .*account_create_table.*\. tools\/list has every tool/);
      expect(text(await call(client, 'table_insert', {}))).toMatch(/Nearest: .*table_create_record/);
      expect(text(await call(client, 'zzz', {}))).toBe('There is no tool named zzz in this session. tools/list has every tool with its arguments.');
    } finally {
      await client.close();
    }
  });

  it('an argument the tool does not have is refused, naming the ones it has, and nothing is done', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const r = await call(client, 'account_publish_app', { requestId: 'slug-guess', html: '<p>shop</p>', slug: 'shop' });
      expect([r.isError, text(r)]).toEqual([
        true,
        'account_publish_app has no argument slug (did you mean appName?); its arguments: requestId, html, files, appName. Nothing was done.',
      ]);
      const apps = await call(client, 'account_list_apps', {});
      expect((apps.structuredContent as { apps: unknown[] }).apps).toEqual([]);
      const named = await call(client, 'account_publish_app', { requestId: 'slug-guess', html: '<p>shop</p>', appName: 'shop' });
      expect((named.structuredContent as { app: { appName: string } }).app.appName).toBe('shop');
      // Nested too: a misspelt `encoding` would have stored the base64 text as the file.
      const logo = { path: 'logo.png', content: Buffer.from('\x89PNG').toString('base64'), encodign: 'base64' };
      const nested = await call(client, 'account_publish_app', { requestId: 'misspelt', html: '<p>logo</p>', appName: 'logo', files: [logo] });
      expect([nested.isError, text(nested)]).toEqual([
        true,
        'account_publish_app: files.0 has no field encodign (did you mean encoding?); its fields: path, content, encoding, contentType. Nothing was done.',
      ]);
      // An object written in another shape altogether (a schema as {field: {type}}): its shape follows.
      const schemaGuess = { title: { type: 'string' }, done: { type: 'boolean' } };
      const misshapen = text(await call(client, 'account_create_table', { appId: 'shop', name: 'Todos', schema: schemaGuess }));
      const listedSchema = (await client.listTools()).tools.find((t) => t.name === 'account_create_table')!.inputSchema.properties!.schema;
      expect(misshapen).toBe(
        `account_create_table: schema has no field title, done; its fields: fields. schema is ${JSON.stringify(listedSchema)}. Nothing was done.`,
      );
      // The fields beside schema instead of inside it: where they go is the whole answer.
      const beside = await call(client, 'account_create_table', { appId: 'shop', name: 'Todos', fields: [{ name: 'title' }] });
      expect(text(beside)).toBe(
        'account_create_table has no argument fields (it goes inside schema: {"fields": …}); its arguments: appId, name, slug, requireReadKey, schema, methods, publicInsert. Nothing was done.',
      );
      expect((await call(client, 'account_list_tables', { appId: 'shop' })).structuredContent).toMatchObject({ tables: [] });
      expect((await call(client, 'account_list_apps', {})).structuredContent).toMatchObject({ apps: [{ appName: 'shop' }] });
    } finally {
      await client.close();
    }
  });

  // The names a model writes first: the Table API's own "filter", an app's "appId" on a table tool, "id".
  it('an argument under another name is refused naming the one it meant, with its shape when it has one', async () => {
    const client = await hosted('/mcp/x402');
    try {
      const listed = (await client.listTools()).tools.find((t) => t.name === 'table_query')!.inputSchema.properties!.where;
      const filter = await call(client, 'table_query', { appName: 'any', table: 't', filter: { done: false } });
      expect([filter.isError, text(filter)]).toEqual([
        true,
        'table_query has no argument filter (did you mean where?); its arguments: appName, table, limit, offset, cursor, includeTotal, where, sort, q, fields, aggregate, aggregateField, groupBy, bbox, writeKey.' +
          ` where is ${JSON.stringify(listed)}. Nothing was done.`,
      ]);
      expect(text(await call(client, 'table_get_record', { appId: 'any', table: 't', id: 1 }))).toBe(
        'table_get_record has no argument appId (did you mean appName?), id (did you mean recordId?); its arguments: appName, table, recordId, writeKey. Nothing was done.',
      );
      // A name already given is not suggested again; a name unlike any other gets no guess.
      expect(text(await call(client, 'table_get_record', { appName: 'any', appId: 'any', table: 't', recordId: '1', colour: 'red' }))).toBe(
        'table_get_record has no argument appId, colour; its arguments: appName, table, recordId, writeKey. Nothing was done.',
      );
      // A record's own fields written as arguments: where they go.
      expect(text(await call(client, 'table_create_record', { appName: 'any', table: 't', title: 'milk', done: false }))).toBe(
        'table_create_record has no argument title, done; its arguments: appName, table, record, records, writeKey (a record\'s fields go inside record: {"title": …, "done": …}). Nothing was done.',
      );
      expect(text(await call(client, 'table_update_record', { appName: 'any', table: 't', recordId: '1', done: true }))).toBe(
        'table_update_record has no argument done; its arguments: appName, table, recordId, fields, writeKey (the fields to change go inside fields: {"done": …}). Nothing was done.',
      );
      expect(text(await call(client, 'table_query', { appName: 'any', table: 't', done: true }))).toMatch(
        /^table_query has no argument done; its arguments: .* \(records whose field matches a value: where: \[\{"field": "done", "value": …\}\]\)\. Nothing was done\.$/,
      );
      // A Table's name written as table, where a Table is made: name.
      expect(text(await call(client, 'create_table_api', { appId: 'any', table: 'todos', schema: { fields: [{ name: 'title' }] } }))).toMatch(
        /^create_table_api has no argument table \(did you mean name\?\); its arguments: appId, name, slug, /,
      );
    } finally {
      await client.close();
    }
  });

  it('an argument of the wrong shape or a missing one is refused naming the field and the shape it takes; nothing is done', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const where = await call(client, 'table_query', { appName: 'any', table: 't', where: { price: { gt: 5 } } });
      expect(where.isError).toBe(true);
      const message = text(where);
      expect(message).toMatch(/^table_query: where: expected array, received object\. where is \{"description":"All must match","type":"array","items":/);
      // The shape named is the one tools/list shows for that argument.
      const listed = (await client.listTools()).tools.find((t) => t.name === 'table_query')!.inputSchema.properties!.where;
      expect(message).toContain(`where is ${JSON.stringify(listed)}. Nothing was done.`);
      // A where written as SQL writes it: the operator's name here.
      const sqlOp = await call(client, 'table_query', { appName: 'any', table: 't', where: [{ field: 'price', op: '>=', value: 5 }] });
      expect(text(sqlOp)).toBe(
        'table_query: where.0.op: ">=" is not one of "eq", "neq", "gt", "gte", "lt", "lte", "in", "isnull", "ilike" (did you mean "gte"?). Nothing was done.',
      );
      const operator = await call(client, 'table_query', { appName: 'any', table: 't', where: [{ field: 'price', operator: 'gt', value: 5 }] });
      expect(text(operator)).toBe('table_query: where.0 has no field operator (did you mean op?); its fields: field, op, value. Nothing was done.');
      // A simple argument of another type says what it is, as the list describes it.
      const sort = await call(client, 'table_query', { appName: 'any', table: 't', sort: [{ field: 'pop', direction: 'desc' }] });
      expect(text(sort)).toBe(
        'table_query: sort: expected string, received array (sort is "-price,name" (- = descending, "-id" = newest first)). Nothing was done.',
      );
      const missing = await call(client, 'account_publish_app', { html: '<p>x</p>' });
      expect([missing.isError, text(missing)]).toEqual([
        true,
        'account_publish_app: requestId is required (string: Unique per publish request; repeating it returns the first result and creates nothing). Nothing was done.',
      ]);
      expect((await call(client, 'account_list_apps', {})).structuredContent).toMatchObject({ apps: [] });
    } finally {
      await client.close();
    }
  });

  // A Table as a model first writes it: the fields as a bare list, SQL's type names.
  it('a value outside its options names the one meant, without the shape; a list for an object holding one list says how to write it', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const fields = [
        { name: 'title', type: 'text' },
        { name: 'done', type: 'bool' },
        { name: 'when', type: 'TIMESTAMP' },
        { name: 'size', type: 'Integer' },
        { name: 'colour', type: 'hue' },
      ];
      const types = '"string", "number", "integer", "boolean", "date", "datetime", "json"';
      expect(text(await call(client, 'account_create_table', { appId: 'any', name: 't', schema: { fields } }))).toBe(
        'account_create_table: ' +
          [
            `schema.fields.0.type: "text" is not one of ${types} (did you mean "string"?)`,
            `schema.fields.1.type: "bool" is not one of ${types} (did you mean "boolean"?)`,
            `schema.fields.2.type: "TIMESTAMP" is not one of ${types} (did you mean "datetime"?)`,
            `schema.fields.3.type: "Integer" is not one of ${types} (did you mean "integer"?)`,
            `schema.fields.4.type: "hue" is not one of ${types}`,
          ].join('; ') +
          '. Nothing was done.',
      );
      const listed = (await client.listTools()).tools.find((t) => t.name === 'account_create_table')!.inputSchema.properties!.schema;
      expect(text(await call(client, 'account_create_table', { appId: 'any', name: 't', schema: [{ name: 'title' }] }))).toBe(
        `account_create_table: schema: expected object, received array (write the list as {"fields": [...]}). schema is ${JSON.stringify(listed)}. Nothing was done.`,
      );
    } finally {
      await client.close();
    }
  });

  // Most MCP clients cannot sign an x402 payment: a signed-in model that met the 402 stopped there.
  it('on /mcp, a paid tool unpaid names the free account tool that does the same; on /mcp/x402 and without the account toolset it does not', async () => {
    const { key } = await h.account();
    const paid = async (path: string) => {
      const client = await hosted(path, path.startsWith('/mcp/x402') ? undefined : key);
      try {
        const r = await call(client, 'create_app_from_html', { appName: 'paid-or-not', html: '<p>x</p>' });
        expect(r.isError).toBe(true);
        return JSON.parse(text(r))['x402/error'].message as string;
      } finally {
        await client.close();
      }
    };
    expect(await paid('/mcp?toolsets=default,apps')).toMatch(
      /Nothing was charged\. Without a wallet that signs x402 payments: account_publish_app does this for the signed-in account, free \(what it makes is the account's, not a wallet's\)\.$/,
    );
    expect(await paid('/mcp/x402')).toMatch(/Nothing was charged\.$/);
    expect(await paid('/mcp?toolsets=apps')).toMatch(/Nothing was charged\.$/);
    // Signed in, the wallet's paid tools are not listed by default: a call names the account's tool.
    const client = await hosted('/mcp', key);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('account_publish_app');
      expect(names).not.toContain('create_app_from_html');
      expect(names).not.toContain('create_table_api');
      expect(text(await call(client, 'create_app_from_html', { appName: 'paid-or-not', html: '<p>x</p>' }))).toBe(
        'create_app_from_html is in the "apps" toolset, not turned on in this session: account_publish_app does this for the account, free. (To list create_app_from_html itself, ask the user to add ?toolsets=account,functions,tables,apps to the endpoint\'s URL.)',
      );
      expect(client.getInstructions()).toMatch(
        /^svc hosts apps .* The account tools act as the signed-in account, free, within its scopes: account_publish_app publishes html and files/,
      );
      expect(client.getInstructions()).not.toMatch(/x402/);
      // deploy_site is not listed here: the instructions say where it is, so no client has to guess it.
      expect(client.getInstructions()).toMatch(/To publish a folder from disk \(deploy_site\) .* the user runs svc-mcp: .*svc-mcp\.$/);
      expect(text(await call(client, 'deploy_site', { folder: '/x' }))).toMatch(
        /, not here\. Here: account_publish_app publishes html and files \(inline; encoding base64 for binary ones\) in one call, for the signed-in account and free\.$/,
      );
      const made = await call(client, 'account_publish_app', { requestId: 'instead', appName: 'paid-or-not', html: '<p>x</p>' });
      expect(made.isError, text(made)).toBeFalsy();
      // Then the model edits the app it made: the wallet's update_app_file names the account's tool.
      const edit = await call(client, 'update_app_file', { appId: 'paid-or-not', path: 'index.html', content: '<p>y</p>' });
      expect(text(edit)).toMatch(
        /^update_app_file is in the "apps" toolset, not turned on in this session: account_write_app_files does this for the account, free\./,
      );
      const edited = await call(client, 'account_write_app_files', {
        appId: 'paid-or-not',
        files: [
          { path: 'index.html', content: '<script src="app.js"></script>' },
          { path: 'app.js', content: 'let y = 1' },
        ],
      });
      expect(edited.isError, text(edited)).toBeFalsy();
      expect(edited.structuredContent).toMatchObject({ app: { appName: 'paid-or-not', fileCount: 2, status: 'updated' } });
      const files = (await call(client, 'account_read_app_files', { appId: 'paid-or-not' })).structuredContent as {
        files: { path: string; content: string }[];
      };
      expect(files.files.map((f) => [f.path, f.content])).toEqual([
        ['app.js', 'let y = 1'],
        ['index.html', '<script src="app.js"></script>'],
      ]);
      // A file the app no longer needs is deleted by the same tool; the entry point is refused, in the service's words.
      const moved = await call(client, 'account_write_app_files', {
        appId: 'paid-or-not',
        files: [
          { path: 'index.html', content: '<script src="main.js"></script>' },
          { path: 'main.js', content: 'let y = 2' },
        ],
        delete: ['app.js'],
      });
      expect(moved.structuredContent, text(moved)).toMatchObject({ app: { fileCount: 2 } });
      expect(text(await call(client, 'account_write_app_files', { appId: 'paid-or-not', delete: ['index.html'] }))).toMatch(
        /^account_write_app_files failed: delete\.0: index\.html is the entry point \("\/" serves it\): replace it instead \[HTTP 400 validation_failed\]/,
      );
      // And a dataset: upload_dataset (local files) and the paid conversion name account_create_dataset.
      expect(text(await call(client, 'upload_dataset', { appId: 'paid-or-not', file: '/x.csv' }))).toMatch(
        /Here: account_create_dataset converts a file given inline \(up to about 1 MiB; base64 for binary kinds\), for the signed-in account and free\.$/,
      );
      // (`default` in ?toolsets= is the hosted default; datasets adds the wallet's conversion.)
      const withDatasets = await hosted('/mcp?toolsets=default,datasets', key);
      try {
        const convert = await call(withDatasets, 'convert_data_file_to_api', { appId: 'paid-or-not', key: 'k', fileName: 'a.csv' });
        expect(JSON.parse(text(convert))['x402/error'].message).toMatch(/account_create_dataset does this for the signed-in account, free/);
      } finally {
        await withDatasets.close();
      }
      const dataset = await call(client, 'account_create_dataset', { appId: 'paid-or-not', fileName: 'prices.csv', content: 'item,price\ntea,3\ncake,5\n' });
      expect(dataset.structuredContent).toMatchObject({ dataset: { datasetId: expect.stringMatching(/^ds_/), slug: 'prices', recordCount: 2 } });
      const cheap = await call(client, 'table_query', { appName: 'paid-or-not', table: 'prices', where: [{ field: 'price', op: 'lt', value: 4 }] });
      expect(cheap.structuredContent).toMatchObject({ records: [{ fields: { item: 'tea', price: 3 } }] });
    } finally {
      await client.close();
    }
  });

  it('on /mcp/x402: an account tool says to connect to /mcp', async () => {
    const client = await hosted('/mcp/x402');
    try {
      await expectUnavailable(
        client,
        'account_usage',
        new RegExp(`^account_usage acts as an account, and /mcp/x402 has none.*connect to ${h.url}/mcp instead`),
      );
      await expectUnavailable(client, 'function_create', /^function_create acts as an account/);
      await expectUnavailable(client, 'wallet_status', /holds no wallet/);
      // No account here: the write tools need the write key, full stop.
      const update = (await client.listTools()).tools.find((t) => t.name === 'table_update_record')!;
      expect(update.description).toBe('Change some fields of one record; the others stay. Needs the write key. Free.');
      // The composites read local files, so they are not here; what they name instead is listed
      // (no composite does the upload steps here: they are in apps and datasets, not advanced).
      const listed = (await client.listTools()).tools.map((t) => t.name);
      for (const [composite, args] of [
        ['deploy_site', { folder: '/x' }],
        ['upload_dataset', { appId: 'any', file: '/x.csv' }],
      ] as const) {
        const named = text(await call(client, composite, args)).match(/Here: (.*)$/)?.[1] ?? '';
        const tools = named.match(/\b[a-z]+(?:_[a-z]+)+\b/g) ?? [];
        expect(tools.length, named).toBeGreaterThan(1);
        for (const tool of tools) expect(listed, `${composite} names ${tool}`).toContain(tool);
      }
    } finally {
      await client.close();
    }
  });

  it('in svc-mcp without SVC_API_KEY an account tool says to set it; read-only, a change says so', async () => {
    const noKey = await connectHttp({ SVC_URL: h.url });
    try {
      await expectUnavailable(
        noKey.client,
        'account_usage',
        /^account_usage acts as an account: ask the user to start svc-mcp with SVC_API_KEY=svc_pat_… .*"account" toolset/,
      );
      await expectUnavailable(noKey.client, 'function_invoke', /"functions" toolset in SVC_TOOLSETS/);
    } finally {
      await noKey.close();
    }
    const readOnly = await connectHttp({ SVC_URL: h.url, SVC_API_KEY: (await h.account()).key, SVC_READ_ONLY: '1', SVC_TOOLSETS: 'account' });
    try {
      await expectUnavailable(
        readOnly.client,
        'account_publish_app',
        /^account_publish_app changes the account, and this server runs read-only \(SVC_READ_ONLY\): ask the user to start svc-mcp without SVC_READ_ONLY/,
      );
      expect((await call(readOnly.client, 'account_usage', {})).isError).toBeFalsy();
    } finally {
      await readOnly.close();
    }
  });

  it('a Table or record that is not there names the tools of this session that list them', async () => {
    const { key } = await h.account();
    const account = await hosted('/mcp', key);
    const wallet = await hosted('/mcp/x402');
    try {
      const published = await call(account, 'account_publish_app', { requestId: 'r1', html: '<h1>hints</h1>', appName: 'hint-app' });
      const appId = (published.structuredContent as { app: { appId: string } }).app.appId;
      expect(
        (await call(account, 'account_create_table', { appId, name: 'Items', slug: 'items', schema: { fields: [{ name: 'title' }] } })).isError,
      ).toBeFalsy();

      const noTable = await call(account, 'table_query', { appName: 'hint-app', table: 'itmes' });
      expect(noTable.isError).toBe(true);
      expect(text(noTable)).toMatch(
        /table hint-app\/itmes not found.*account_list_apps lists your apps, account_list_tables \(appId\) lists an app's Tables\.$/,
      );
      const noRecord = await call(account, 'table_get_record', { appName: 'hint-app', table: 'items', recordId: 'rec_missing' });
      expect(text(noRecord)).toMatch(/not found.*Check recordId \(table_query lists the records with their ids\)\.$/);
      // Table tools are free: a refused read says nothing of money, a refused write that nothing changed.
      expect(text(noTable)).not.toMatch(/paid/i);
      const badWrite = await call(account, 'table_create_record', { appName: 'hint-app', table: 'items', record: { titel: 'x' } });
      expect(text(badWrite)).toMatch(/^table_create_record failed: .*titel.*\[HTTP 400 validation_failed\]\. Nothing was changed\. Fix the parameters/);
      expect((await call(account, 'table_query', { appName: 'hint-app', table: 'items', aggregate: 'count' })).structuredContent).toMatchObject({ value: 0 });

      const fromWallet = await call(wallet, 'table_query', { appName: 'hint-app', table: 'itmes' });
      expect(text(fromWallet)).toMatch(
        /list_apps lists your wallet's apps; a Table's name is the one create_table_api or convert_data_file_to_api answered\.$/,
      );
      // A session with the table tools only names no tool it does not list.
      const tablesOnly = await hosted('/mcp?toolsets=tables', key);
      try {
        expect(text(await call(tablesOnly, 'table_query', { appName: 'hint-app', table: 'itmes' }))).toMatch(
          /table hint-app\/itmes not found.* Check appName and table: a Table's name is the one the tool that created it answered\.$/,
        );
      } finally {
        await tablesOnly.close();
      }
    } finally {
      await Promise.all([account.close(), wallet.close()]);
    }
  });

  it("a function's refusals say what to do: publish it first, fix the code rather than retry; a compile error is said once", async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const slug = `hint-fn-${Date.now()}`;
      const created = await call(client, 'function_create', { name: 'Hint', slug, code: 'export default () => ({ status: 200, body: { ok: 1 } })' });
      expect(created.isError, text(created)).toBeFalsy();
      const functionId = (created.structuredContent as { function: { functionId: string } }).function.functionId;
      const draft = await call(client, 'function_invoke', { functionId: slug, method: 'GET', path: '/' });
      // The route's 404 cannot tell a draft from a stranger's Function; the tool can, for the caller's own.
      expect(text(draft)).toBe(
        `function_invoke failed: ${slug} is a draft, never published [HTTP 404 not_found]. function_publish makes it live; then invoke it again.`,
      );
      expect(text(await call(client, 'function_invoke', { functionId: 'no-such-function-here' }))).toMatch(
        /\[HTTP 404 not_found\]\. function_list lists your functions with their status: a function answers only once published \(function_publish\)/,
      );

      expect((await call(client, 'function_update_draft', { functionId, code: 'export default () => { throw new Error("boom") }' })).isError).toBeFalsy();
      expect((await call(client, 'function_publish', { functionId })).isError).toBeFalsy();
      const threw = await call(client, 'function_invoke', { functionId: slug, method: 'GET', path: '/' });
      expect(text(threw)).toMatch(/Error: boom \[HTTP 502 function_failed\]\. The function's own code failed.*function_update_draft, then function_publish/);
      expect(text(threw)).not.toMatch(/Retry later/);

      const broken = text(await call(client, 'function_create', { name: 'Broken', slug: `${slug}-b`, code: 'export default (req => ' }));
      expect(broken).toMatch(/^function_create failed: code does not compile: SyntaxError/);
      expect(broken.split('SyntaxError').length).toBe(2); // the issue is not repeated after the message that states it
    } finally {
      await client.close();
    }
  });

  it('functions as a model first writes them: ids named as the tools take them, code not echoed, a fetch-style handler told the contract, invoke with only a slug', async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const slug = `first-fn-${Date.now()}`;
      const fetchStyle = "export default async (req) => new Response('hi ' + new URL(req.url).searchParams.get('n'))";
      const created = await call(client, 'function_create', { name: 'First', slug, code: fetchStyle });
      const fn = (created.structuredContent as { function: Record<string, unknown> }).function;
      expect(fn).toMatchObject({ functionId: expect.stringMatching(/^fn_/), slug, status: 'draft' });
      expect(fn).not.toHaveProperty('id');
      expect(fn).not.toHaveProperty('code'); // the model sent it; function_get answers it
      const functionId = fn.functionId as string;
      expect((await call(client, 'function_get', { functionId })).structuredContent).toMatchObject({ function: { functionId, code: fetchStyle } });
      expect((await call(client, 'function_publish', { functionId })).isError).toBeFalsy();
      const listed = (await call(client, 'function_list', {})).structuredContent as { functions: Record<string, unknown>[] };
      expect(listed.functions.find((f) => f.functionId === functionId)).not.toHaveProperty('code');

      const contract =
        'A function is an ES module in a sandbox with the ECMAScript built-ins only (no module/require, no fetch, no timers): `export default async (request) => ({ status: 200, body: … })`, where request is a plain {method, path, query (an object), headers, body} and the return is {status, headers, body}, a string or a JSON value (there is no `res` to call). Change the code (function_update_draft, then function_publish) and invoke again.';
      const fetchFailed = await call(client, 'function_invoke', { functionId: slug });
      expect(text(fetchFailed)).toMatch(/'Response' is not defined \[HTTP 502 function_failed\]\. /);
      expect(text(fetchFailed).endsWith(contract)).toBe(true);
      // Node's module.exports and Express's (req, res) meet the same answer.
      for (const code of ['module.exports = async (req) => ({ body: req.body })', 'export default function (req, res) { res.json({ ok: true }) }']) {
        expect((await call(client, 'function_update_draft', { functionId, code })).isError).toBeFalsy();
        expect((await call(client, 'function_publish', { functionId })).isError).toBeFalsy();
        const failed = text(await call(client, 'function_invoke', { functionId: slug }));
        expect(failed, code).toMatch(
          /^function_invoke failed: function [\w-]+ failed \(threw\): (ReferenceError: 'module' is not defined|TypeError: cannot read property 'json' of undefined) /,
        );
        expect(failed.endsWith(contract), failed).toBe(true);
      }

      const plain = 'export default (req) => ({ body: { method: req.method, path: req.path, query: req.query } })';
      expect((await call(client, 'function_update_draft', { functionId, code: plain })).isError).toBeFalsy();
      expect((await call(client, 'function_publish', { functionId })).isError).toBeFalsy();
      // method and path default to GET and /; query may be an object.
      const answered = await call(client, 'function_invoke', { functionId: slug, query: { n: 'x', page: 2 } });
      expect(answered.structuredContent, text(answered)).toMatchObject({
        function: { functionId, slug },
        response: { status: 200, body: { method: 'GET', path: '/', query: { n: 'x', page: '2' } } },
      });
      const asString = await call(client, 'function_invoke', { functionId: slug, method: 'POST', path: '/a', query: '?n=y' });
      expect(asString.structuredContent).toMatchObject({ response: { body: { method: 'POST', path: '/a', query: { n: 'y' } } } });
      // A model's first create names no name (the slug is the name it thinks of), and then holds the slug.
      const second = `second-fn-${Date.now()}`;
      const nameless = await call(client, 'function_create', { slug: second, code: plain });
      expect((nameless.structuredContent as { function: Record<string, unknown> }).function, text(nameless)).toMatchObject({ name: second, slug: second });
      expect((await call(client, 'function_publish', { functionId: second })).structuredContent).toMatchObject({ function: { slug: second, status: 'live' } });
      // Invoked by its slug or by its id, as every function tool takes it; by a slug given as slug, told the name.
      const bySlug = await call(client, 'function_invoke', { functionId: second });
      expect(bySlug.isError, text(bySlug)).toBeFalsy();
      const id = (nameless.structuredContent as { function: { functionId: string } }).function.functionId;
      const byId = await call(client, 'function_invoke', { functionId: id });
      const { durationMs: _a, ...answeredBySlug } = bySlug.structuredContent as Record<string, unknown>;
      const { durationMs: _b, ...answeredById } = byId.structuredContent as Record<string, unknown>;
      expect(answeredById).toEqual(answeredBySlug);
      expect(answeredById).toMatchObject({ function: { functionId: id, slug: second } });
      expect(text(await call(client, 'function_invoke', { slug: second }))).toBe(
        'function_invoke has no argument slug (did you mean functionId?); its arguments: functionId, method, path, query, headers, body. Nothing was done.',
      );
      expect(text(await call(client, 'function_invoke', { functionId: 'fn_doesnotexist00' }))).toMatch(/^function_invoke failed: .*not found/);
      // Or a name and no slug: the slug is made from the name; and the other way round, slug for functionId.
      const named = await call(client, 'function_create', { name: `Third Fn ${Date.now()}`, code: plain });
      expect(named.isError, text(named)).toBeFalsy();
      const third = (named.structuredContent as { function: { slug: string } }).function.slug;
      expect(third).toMatch(/^third-fn-\d+$/);
      expect(text(await call(client, 'function_publish', { slug: third }))).toBe(
        'function_publish has no argument slug (did you mean functionId?); its arguments: functionId. Nothing was done.',
      );
    } finally {
      await client.close();
    }
  });

  it("an app's files are read within a model's budget: the files past it are listed without content and named to ask for", async () => {
    const client = await hosted('/mcp', (await h.account()).key);
    try {
      const text45k = (c: string) => `/* ${c} */\n${c.repeat(45_000 - 8)}`;
      const files = ['a.js', 'b.js', 'c.js'].map((path) => ({ path, content: text45k(path[0]!) }));
      files.push({ path: 'big.css', content: 'x'.repeat(120_000) });
      const published = await call(client, 'account_publish_app', { requestId: 'budget', html: '<p>files</p>', appName: 'budget-app', files });
      expect(published.isError, text(published)).toBeFalsy();

      const all = await call(client, 'account_read_app_files', { appId: 'budget-app' });
      const answer = all.structuredContent as { files: { path: string; size: number; content?: string; contentCut?: boolean }[] };
      const withContent = answer.files.filter((f) => f.content !== undefined);
      expect(withContent.reduce((n, f) => n + f.content!.length, 0)).toBeLessThanOrEqual(100_000);
      const listedOnly = answer.files.filter((f) => f.content === undefined).map((f) => f.path);
      expect(listedOnly.length).toBeGreaterThan(0);
      // Every file is still listed, with its size.
      expect(answer.files.map((f) => [f.path, f.size]).sort()).toEqual([
        ['a.js', 45_000],
        ['b.js', 45_000],
        ['big.css', 120_000],
        ['c.js', 45_000],
        ['index.html', 12],
      ]);
      expect(text(all).split('\n')[0]).toBe(
        `${listedOnly.length} files are listed without content (over 100,000 characters in one answer): name a few in path to read them (${listedOnly.join(', ')}).`,
      );
      // Named, a listed-only file comes whole; one over the budget alone comes cut at it.
      const one = (await call(client, 'account_read_app_files', { appId: 'budget-app', path: 'c.js' })).structuredContent as typeof answer;
      expect(one.files).toEqual([expect.objectContaining({ path: 'c.js', content: files[2]!.content })]);
      const big = await call(client, 'account_read_app_files', { appId: 'budget-app', path: ['big.css'] });
      expect((big.structuredContent as typeof answer).files[0]).toMatchObject({ path: 'big.css', size: 120_000, contentCut: true });
      expect((big.structuredContent as typeof answer).files[0]!.content).toHaveLength(100_000);
      expect(text(big).split('\n')[0]).toBe('big.css is cut at its first 100,000 characters.');
    } finally {
      await client.close();
    }
  });

  it('a function stopped by a failed sandbox (not its code) says to call again', async () => {
    // The service's answer when the worker running a function died (service/functions/invoke.ts).
    const sandboxFailed = (input: string | URL | Request, init?: RequestInit) =>
      String(input instanceof Request ? input.url : input).includes('/api/v1/functions/invoke/')
        ? Promise.resolve(
            Response.json(
              {
                ok: false,
                error: { code: 'function_failed', message: 'function echo failed (sandbox_error): the worker exited', details: { reason: 'sandbox_error' } },
              },
              { status: 502 },
            ),
          )
        : fetch(input, init);
    const s = await connectHttp({ SVC_URL: h.url, SVC_API_KEY: (await h.account()).key, SVC_TOOLSETS: 'functions' }, { fetch: sandboxFailed as typeof fetch });
    try {
      const r = await call(s.client, 'function_invoke', { functionId: 'echo', method: 'GET', path: '/' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/\(sandbox_error\).*\[HTTP 502 function_failed\]\. The sandbox running the function failed, not its code: call again\.$/);
    } finally {
      await s.close();
    }
  });
});
