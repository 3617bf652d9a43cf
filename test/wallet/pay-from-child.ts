// Run as a separate process by wallet.test.ts: pays `count` concurrent calls with the wallet
// configured from the environment and prints how many succeeded / were refused by a cap.
import { loadWalletConfig } from '../../wallet/config.js';
import { createWallet } from '../../wallet/wallet.js';

const [url, count] = [process.argv[2], Number(process.argv[3])];
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
    }),
  ),
);
const paid = results.filter((r) => r.status === 'fulfilled').length;
const capped = results.filter((r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'cap_exceeded').length;
process.stdout.write(JSON.stringify({ paid, capped }));
