import { loadWalletConfig } from './config.js';
import { isWalletError } from './errors.js';
import { createWallet } from './wallet.js';

/**
 * `svc-mcp --accept-payee <url>`: the person, at a terminal, accepts the payee a service names now
 * as its pinned payee (wallet/payees.ts). Never a tool: a model cannot run it. Prints what was pinned
 * and what is pinned now; returns the process's exit code.
 */
export async function acceptPayeeFromCli(url: string, env: Record<string, string | undefined>, print: (line: string) => void = console.error): Promise<number> {
  let serviceUrl: string;
  try {
    serviceUrl = new URL(url).toString().replace(/\/+$/, '');
  } catch {
    print(`svc-mcp: --accept-payee takes the service's URL (as SVC_URL gives it), e.g. https://svc.example.com; got "${url}"`);
    return 2;
  }
  const wallet = createWallet(loadWalletConfig({ ...env, SVC_URL: serviceUrl }));
  let seen;
  try {
    seen = await wallet.discoveredTerms();
  } catch (e) {
    print(`svc-mcp: ${isWalletError(e) ? e.message : (e as Error).message}`);
    return 1;
  }
  const payee = { recipient: seen.recipient, network: seen.caip2, asset: seen.asset };
  if (wallet.config.payTo && wallet.config.payTo !== seen.recipient) {
    print(
      `svc-mcp: ${serviceUrl} names the recipient ${seen.recipient}, but SVC_PAY_TO pins ${wallet.config.payTo}: change SVC_PAY_TO to accept it. Nothing was changed.`,
    );
    return 1;
  }
  const before = await wallet.payees.accept(serviceUrl, payee);
  const was = before ? `was ${before.recipient} on ${before.network} (${before.asset}), pinned ${new Date(before.pinnedAt).toISOString()}` : 'none was pinned';
  print(
    `svc-mcp: the payee of ${serviceUrl} is now ${payee.recipient} on ${payee.network} (${payee.asset}); ${was}. Pinned in ${wallet.payees.file}. Restart the MCP servers that pay it.`,
  );
  return 0;
}
