// Run as a separate process by ledger-processes.test.ts: pays `count` concurrent calls (for `tool`,
// when given: whose per-tool cap counts them) with the wallet configured from the environment and
// prints how many succeeded / were refused by a cap, with the refusals' messages.
import { loadWalletConfig } from '../../wallet/config.js';
import { createWallet } from '../../wallet/wallet.js';

const [url, count, tool] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const wallet = createWallet(loadWalletConfig(process.env));
const results = await Promise.allSettled(
  Array.from({ length: count }, () =>
    wallet.fetch({
      action: 'x402.create_app_from_html',
      method: 'POST',
      url: `${url}/api/x402/apps`,
      headers: { 'content-type': 'application/json' },
      body: '{}',
      quote: '0.007',
      ...(tool ? { tool } : {}),
    }),
  ),
);
const paid = results.filter((r) => r.status === 'fulfilled').length;
const refusals = results.flatMap((r) =>
  r.status === 'rejected' && (r.reason as { code?: string }).code === 'cap_exceeded' ? [(r.reason as Error).message] : [],
);
process.stdout.write(JSON.stringify({ paid, capped: refusals.length, refusals }));
