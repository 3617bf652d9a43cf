import { viewDocument } from './view-kit.js';

/**
 * Table grid, for table_query: the records as a grid, sorted by a header's click and paged, each
 * by calling table_query again through the host with the same arguments (the query that produced
 * the page, shown above it; a write key is shown as ***). An aggregate answer is its value, or its
 * groups as rows.
 */
const SCRIPT = `
let query = null;
let busy = false;
function sortOf(q) { return (q && q.sort) || ''; }
async function again(change) {
  if (!query || busy) return;
  busy = true;
  const args = Object.assign({}, query, change);
  delete args.cursor;
  try {
    const r = await svc.callTool('table_query', args);
    if (!r.isError) query = args;
    render(r);
  } catch (e) {
    show(h('p', { class: 'error' }, e.message));
  } finally {
    busy = false;
  }
}
function queryLine() {
  if (!query) return null;
  const shown = Object.assign({}, query);
  if (shown.writeKey) shown.writeKey = '***';
  return h('div', { class: 'muted' }, 'table_query ', h('code', { 'data-k': 'query' }, JSON.stringify(shown)));
}
function cell(v) {
  if (v === null || v === undefined) return '';
  return typeof v === 'object' ? JSON.stringify(v) : String(v);
}
function header(name) {
  const s = sortOf(query);
  const mark = s === name ? ' ▲' : s === '-' + name ? ' ▼' : '';
  const next = s === name ? '-' + name : name;
  return h('th', { 'data-field': name, style: query ? 'cursor:pointer' : null, title: query ? 'Sort by ' + name : null, onclick: () => again({ sort: next, offset: 0 }) }, name + mark);
}
function grid(columns, rows) {
  return h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, h('tr', {}, columns.map(header))), h('tbody', {}, rows.map((r) => h('tr', {}, r.map((v) => h('td', { title: cell(v) }, cell(v))))))));
}
function render(result) {
  if (result.isError) return show(queryLine(), failure(result));
  const sc = result.structuredContent || {};
  if (sc.aggregate) {
    const value = sc.groups
      ? grid([sc.groupBy || 'key', sc.aggregate, 'count'], sc.groups.map((g) => [g.key, g.value, g.count]))
      : h('p', {}, h('b', {}, sc.aggregate + (sc.field ? '(' + sc.field + ')' : '') + ' = '), h('span', { 'data-k': 'value' }, cell(sc.value)), sc.count !== undefined ? h('span', { class: 'muted' }, ' over ' + sc.count + ' records') : null);
    return show(queryLine(), value);
  }
  let columns, rows;
  if (sc.columns && sc.rows) {
    columns = sc.columns;
    rows = sc.rows;
  } else {
    const records = sc.records || [];
    const names = [];
    for (const r of records) for (const k of Object.keys(r.fields || {})) if (!names.includes(k)) names.push(k);
    columns = ['id'].concat(names);
    rows = records.map((r) => [r.id].concat(names.map((k) => (r.fields || {})[k])));
  }
  const offset = sc.offset || 0;
  const limit = sc.limit || rows.length;
  const more = sc.nextCursor !== null && sc.nextCursor !== undefined;
  const range = rows.length ? 'records ' + (offset + 1) + '–' + (offset + rows.length) : 'no records';
  const pager = h('div', { class: 'row' },
    h('button', { class: 'act', 'data-k': 'prev', disabled: !query || offset === 0, onclick: () => again({ offset: Math.max(0, offset - limit), limit }) }, '‹ Previous'),
    h('span', { class: 'muted', 'data-k': 'range' }, range + (sc.total !== undefined ? ' of ' + sc.total : '')),
    h('button', { class: 'act', 'data-k': 'next', disabled: !query || !more, onclick: () => again({ offset: offset + limit, limit }) }, 'Next ›'),
  );
  show(queryLine(), rows.length ? grid(columns, rows) : h('p', { class: 'muted' }, 'No records match.'), pager);
}
svc.on('ui/notifications/tool-input', (p) => {
  query = Object.assign({}, p.arguments || {});
  show(queryLine(), h('div', { class: 'progress' }, h('span')));
});
svc.on('ui/notifications/tool-result', render);
svc.connect('svc-table');
`;

export const TABLE_VIEW = viewDocument('Table records', '', SCRIPT);
