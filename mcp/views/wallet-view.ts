import { viewDocument } from './view-kit.js';

/**
 * Wallet, for wallet_status and list_receipts: the balance, what was spent against each cap (per
 * call: the latest payment; session, 24 h, lifetime, each capped tool's 24 h, the payments signed in
 * the last hour) as bars, the payee pinned for each service, the payments whose outcome is not
 * known yet (counted as spent until the chain tells), and the latest receipts with their
 * transactions. Each tool's result has half of that: the view asks the host for the other half
 * (list_receipts after wallet_status, wallet_status after list_receipts). A transaction links to the
 * network's explorer (Base, Base Sepolia); a wallet paying a service on a loopback address pays the
 * local dev chain, which has none, so its hashes are shown without a link.
 */
const SCRIPT = `
const EXPLORERS = { 'eip155:8453': 'https://basescan.org/tx/', 'eip155:84532': 'https://sepolia.basescan.org/tx/' };
let status = null;
let receipts = null;
function explorerOf(s) {
  if (!s || !s.network) return undefined;
  try {
    const host = new URL(s.serviceUrl).hostname;
    if (host === 'localhost' || host === '[::1]' || host.startsWith('127.')) return undefined;
  } catch (e) {}
  return EXPLORERS[s.network];
}
function bar(label, spent, cap, key, unit) {
  unit = unit || 'USDC';
  if (cap === null || cap === undefined) return h('div', { 'data-cap': key }, h('div', { class: 'row' }, h('span', {}, label), h('span', { class: 'muted' }, (unit === 'USDC' ? usdc(spent) : spent + ' ' + unit) + ' spent · no cap')));
  const ratio = Number(cap) > 0 ? Math.min(1, Number(spent) / Number(cap)) : 1;
  return h('div', { 'data-cap': key },
    h('div', { class: 'row' }, h('span', {}, label), h('span', { class: 'muted' }, spent + ' of ' + cap + ' ' + unit)),
    h('div', { class: 'bar' + (ratio >= 1 ? ' over' : '') }, h('span', { style: 'width:' + (ratio * 100).toFixed(1) + '%' })),
  );
}
function render() {
  const parts = [];
  if (status) {
    const s = status;
    parts.push(
      h('div', { class: 'row' }, h('h1', { 'data-k': 'balance' }, s.balance === null || s.balance === undefined ? 'balance unknown' : s.balance + ' USDC'), s.network && h('span', { class: 'badge' }, s.network)),
      h('div', { class: 'muted' }, h('code', {}, s.address || 'no wallet configured'), s.balanceNote ? ' · ' + s.balanceNote : ''),
      bar('Per call', receipts && receipts.receipts[0] ? receipts.receipts[0].price : '0', s.caps.perCall, 'perCall'),
      bar('This session', s.spent.session, s.caps.perSession, 'session'),
      bar('Last 24 h', s.spent.day, s.caps.perDay, 'day'),
      bar('Lifetime', s.spent.total, s.caps.total, 'total'),
      ...Object.keys(s.caps.perTool || {}).map((tool) => bar(tool + ', last 24 h', (s.spent.perTool || {})[tool] || '0', s.caps.perTool[tool], 'tool:' + tool)),
      s.caps.paidCallsPerHour ? bar('Paid calls, last hour', s.spent.paidCallsLastHour || 0, s.caps.paidCallsPerHour, 'callsPerHour', 'calls') : null,
    );
    const pins = (s.payees && s.payees.pinned) || [];
    if (s.payees && (pins.length || s.payees.payTo || s.payees.note))
      parts.push(h('div', { 'data-k': 'payees', class: 'muted' },
        s.payees.note ? h('div', { class: 'error' }, s.payees.note) : null,
        s.payees.payTo ? h('div', {}, 'Pays only ', h('code', {}, s.payees.payTo), ' (SVC_PAY_TO)') : null,
        pins.map((p) => h('div', {}, 'Pays ', h('code', {}, p.recipient), ' for ' + p.serviceUrl + ' (pinned ' + new Date(p.pinnedAt).toLocaleDateString() + ')')),
      ));
    const pending = s.pending || [];
    if (pending.length)
      parts.push(
        h('div', { class: 'muted' }, pending.length + (pending.length === 1 ? ' payment' : ' payments') + ' not settled yet, counted as spent until the chain tells:'),
        h('div', { class: 'scroll' }, h('table', { 'data-k': 'pending' },
          h('thead', {}, h('tr', {}, h('th', {}, 'when'), h('th', {}, 'tool'), h('th', {}, 'price'), h('th', {}, 'state'))),
          h('tbody', {}, pending.map((p) => h('tr', {}, h('td', {}, new Date(p.at).toLocaleString()), h('td', {}, p.tool), h('td', {}, p.price), h('td', {}, p.state)))),
        )),
      );
  }
  if (receipts) {
    const explorer = explorerOf(status);
    parts.push(h('div', { class: 'muted' }, receipts.count + (receipts.count === 1 ? ' payment, ' : ' payments, ') + receipts.totalSpent + ' USDC in all'));
    if (receipts.receipts.length)
      parts.push(h('div', { class: 'scroll' }, h('table', { 'data-k': 'receipts' },
        h('thead', {}, h('tr', {}, h('th', {}, 'when'), h('th', {}, 'tool'), h('th', {}, 'price'), h('th', {}, 'status'), h('th', {}, 'transaction'))),
        h('tbody', {}, receipts.receipts.map((r) => h('tr', {},
          h('td', {}, new Date(r.at).toLocaleString()), h('td', {}, r.tool), h('td', {}, r.price), h('td', {}, r.status),
          h('td', {}, !r.txHash ? '' : explorer ? h('button', { class: 'link', onclick: () => svc.openLink(explorer + r.txHash) }, r.txHash.slice(0, 10) + '…') : h('code', { title: 'on the local dev chain (no explorer)' }, r.txHash.slice(0, 10) + '…')),
        ))),
      )));
  }
  show(parts);
}
async function fetchOther(tool, args) {
  try {
    const r = await svc.callTool(tool, args);
    return r.isError ? null : r.structuredContent;
  } catch (e) {
    return null;
  }
}
svc.on('ui/notifications/tool-result', async (result) => {
  if (result.isError) return show(failure(result));
  const sc = result.structuredContent || {};
  if (sc.receipts) receipts = sc;
  else status = sc;
  render();
  if (!receipts) receipts = await fetchOther('list_receipts', { limit: 5 });
  else if (!status) status = await fetchOther('wallet_status', {});
  render();
});
svc.connect('svc-wallet');
`;

export const WALLET_VIEW = viewDocument('Wallet', '', SCRIPT);
