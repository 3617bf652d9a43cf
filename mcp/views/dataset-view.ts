import { viewDocument } from './view-kit.js';

/**
 * Dataset, for upload_dataset and the conversion tools: while the tool runs (its arguments are in,
 * its result not yet), which file is converted and a progress bar; then the inferred schema, the
 * record count, the Table API URL (opened through the host), and the first rows, read by calling
 * table_query through the host (the app and table are the last two segments of the API's path URL).
 */
const SCRIPT = `
function datasetOf(sc) {
  const d = sc.dataset || sc.asset || sc;
  const parts = d.pathUrl ? new URL(d.pathUrl).pathname.split('/').filter(Boolean) : [];
  return {
    name: d.name || d.slug,
    format: d.format,
    url: d.url,
    fields: d.fields || [],
    recordCount: d.recordCount,
    appName: sc.appName || (parts.length >= 2 ? decodeURIComponent(parts[parts.length - 2]) : undefined),
    table: sc.table || d.slug || (parts.length >= 1 ? decodeURIComponent(parts[parts.length - 1]) : undefined),
  };
}
async function firstRows(d) {
  const box = document.getElementById('rows');
  if (!d.appName || !d.table) return box.replaceChildren();
  try {
    const r = await svc.callTool('table_query', { appName: d.appName, table: d.table, limit: 5 });
    if (r.isError) return box.replaceChildren(failure(r));
    const records = (r.structuredContent && r.structuredContent.records) || [];
    const names = d.fields.length ? d.fields.map((f) => f.name) : Object.keys((records[0] && records[0].fields) || {});
    const cell = (v) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
    box.replaceChildren(
      h('div', { class: 'muted' }, 'First ' + records.length + ' records'),
      h('div', { class: 'scroll' }, h('table', {}, h('thead', {}, h('tr', {}, names.map((n) => h('th', {}, n)))), h('tbody', {}, records.map((rec) => h('tr', {}, names.map((n) => h('td', { title: cell(rec.fields[n]) }, cell(rec.fields[n]))))))))
    );
  } catch (e) {
    box.replaceChildren(h('p', { class: 'error' }, e.message));
  }
}
function render(result) {
  if (result.isError) return show(failure(result));
  const d = datasetOf(result.structuredContent || {});
  const sc = result.structuredContent || {};
  show(
    h('div', { class: 'row' }, h('h1', {}, d.name || 'dataset'), d.format && h('span', { class: 'badge' }, d.format), d.recordCount !== undefined && h('span', { 'data-k': 'count' }, d.recordCount + ' records'), sc.paid !== undefined && h('span', { class: 'muted', 'data-k': 'paid' }, 'cost ' + usdc(sc.paid))),
    d.url && h('div', {}, 'API ', h('button', { class: 'link', 'data-k': 'url', onclick: () => svc.openLink(d.url) }, d.url)),
    d.fields.length > 0 && h('div', { class: 'scroll' }, h('table', { 'data-k': 'schema' }, h('thead', {}, h('tr', {}, h('th', {}, 'field'), h('th', {}, 'type'), h('th', {}, 'label'))), h('tbody', {}, d.fields.map((f) => h('tr', {}, h('td', {}, f.name), h('td', {}, f.type), h('td', {}, f.label || '')))))),
    h('div', { id: 'rows' }, h('div', { class: 'progress' }, h('span'))),
  );
  firstRows(d);
}
svc.on('ui/notifications/tool-input', (p) => {
  const a = p.arguments || {};
  const file = a.file || a.fileName || a.key || 'the data file';
  show(h('p', {}, 'Converting ' + String(file).split('/').pop() + (a.appName || a.appId ? ' for ' + (a.appName || a.appId) : '') + '…'), h('div', { class: 'progress', 'data-k': 'running' }, h('span')));
});
svc.on('ui/notifications/tool-cancelled', (p) => show(h('p', { class: 'error' }, 'Cancelled' + (p.reason ? ': ' + p.reason : '') + '.')));
svc.on('ui/notifications/tool-result', render);
svc.connect('svc-dataset');
`;

export const DATASET_VIEW = viewDocument('Dataset', '', SCRIPT);
