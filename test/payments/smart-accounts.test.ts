import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  parseAbi,
  serializeErc6492Signature,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount, toAccount } from 'viem/accounts';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEV_RECIPIENT } from '../../service/payments/x402-config.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { devChain, html, jsonInit, payV1, payV2 } from './helpers.js';

// Smart accounts pay like plain keys: a deployed contract wallet (ERC-1271) and one not deployed yet
// (ERC-6492, deployed by the settlement through an accepted factory), each through a real x402 client.
const PRICE = 7000n;
const FACTORY = '0x00000000000000000000000000000000000fac70' as Address;
const OTHER_FACTORY = '0x00000000000000000000000000000000000fac71' as Address;
const FACTORY_ABI = parseAbi([
  'function deploy(address owner, bytes32 salt) returns (address)',
  'function addressOf(address owner, bytes32 salt) view returns (address)',
]);

function compileTestContracts(): { factoryRuntime: Hex } {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string };
  const source = fs.readFileSync(path.join(import.meta.dirname, 'contracts', 'TestSmartAccount.sol'), 'utf8');
  const out = JSON.parse(
    solc.compile(
      JSON.stringify({
        language: 'Solidity',
        sources: { 'TestSmartAccount.sol': { content: source } },
        settings: { evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
      }),
    ),
  );
  const errors = (out.errors ?? []).filter((e: { severity: string }) => e.severity === 'error');
  if (errors.length) throw new Error(JSON.stringify(errors));
  return { factoryRuntime: `0x${out.contracts['TestSmartAccount.sol'].TestAccountFactory.evm.deployedBytecode.object}` };
}

/** What an x402 (or Sign-In-With-X) client signs with: the smart account's address, its owner's key, maybe an ERC-6492 wrapper. */
function smartAccountSigner(address: Address, owner: LocalAccount, wrap?: { factory: Address; data: Hex }): LocalAccount {
  return toAccount({
    address,
    sign: (p) => owner.sign!(p),
    signMessage: async (m) => {
      const signature = await owner.signMessage(m);
      return wrap ? serializeErc6492Signature({ address: wrap.factory, data: wrap.data, signature }) : signature;
    },
    signTransaction: (t) => owner.signTransaction(t),
    signTypedData: async (td) => {
      const signature = await owner.signTypedData(td as never);
      return wrap ? serializeErc6492Signature({ address: wrap.factory, data: wrap.data, signature }) : signature;
    },
  });
}

describe('smart accounts pay (ERC-1271, ERC-6492) on the dev chain', { timeout: 120_000 }, () => {
  let h: Harness;
  let rpc: (method: string, params: unknown[]) => Promise<unknown>;
  let chainClient: PublicClient;
  beforeAll(async () => {
    h = await startHarness('pglite', { SVC_X402_ERC6492_FACTORIES: FACTORY });
    const chain = devChain(h);
    await chain.mint(DEV_RECIPIENT, 0n); // starts the chain
    rpc = async (method, params) => {
      const res = await fetch(chain.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      return ((await res.json()) as { result: unknown }).result;
    };
    const { factoryRuntime } = compileTestContracts();
    await rpc('anvil_setCode', [FACTORY, factoryRuntime]);
    await rpc('anvil_setCode', [OTHER_FACTORY, factoryRuntime]);
    chainClient = createPublicClient({ transport: http(chain.rpcUrl) }) as PublicClient;
  });
  afterAll(async () => h?.close());

  const salt = () => `0x${randomBytes(32).toString('hex')}` as Hex;
  const addressOf = (factory: Address, owner: Address, s: Hex) =>
    chainClient.readContract({ address: factory, abi: FACTORY_ABI, functionName: 'addressOf', args: [owner, s] });
  const isDeployed = async (a: Address) => ((await chainClient.getCode({ address: a })) ?? '0x') !== '0x';

  /** Deploys a smart account now (the owner pays the gas), as a wallet that exists before it pays. */
  async function deployedAccount(owner: LocalAccount): Promise<Address> {
    const s = salt();
    await rpc('anvil_setBalance', [owner.address, '0xde0b6b3a7640000']);
    const w = createWalletClient({ account: owner, transport: http(devChain(h).rpcUrl) });
    const hash = await w.writeContract({ chain: null, address: FACTORY, abi: FACTORY_ABI, functionName: 'deploy', args: [owner.address, s] });
    await chainClient.waitForTransactionReceipt({ hash });
    const account = await addressOf(FACTORY, owner.address, s);
    expect(await isDeployed(account)).toBe(true);
    return account;
  }

  for (const [label, pay] of [
    ['x402-fetch@1.2.0 (v1)', payV1],
    ['@x402/fetch (v2)', payV2],
  ] as const) {
    it(`a deployed contract wallet (ERC-1271) pays through ${label}; it owns the app; charged once`, async () => {
      const owner = privateKeyToAccount(generatePrivateKey());
      const account = await deployedAccount(owner);
      const chain = devChain(h);
      await chain.mint(account, 100_000n);
      const recipientBefore = await chain.balanceOf(DEV_RECIPIENT);
      const name = `smart-1271-${label.startsWith('x402-fetch') ? 'v1' : 'v2'}`;
      const res = await pay(smartAccountSigner(account, owner) as never)(`${h.url}/api/x402/apps`, jsonInit('POST', { name, html: html('Smart') }));
      expect(res.status).toBe(201);
      const body = await res.json();
      expect(body.receipt).toMatchObject({ wallet: account.toLowerCase(), status: 'settled', price: '0.007' });
      expect(await chain.balanceOf(account)).toBe(100_000n - PRICE);
      expect((await chain.balanceOf(DEV_RECIPIENT)) - recipientBefore).toBe(PRICE);
      // The account proves itself for a free call too (a zero-value authorization checked by ERC-1271).
      const mine = await (await pay(smartAccountSigner(account, owner) as never)(`${h.url}/api/x402/apps`)).json();
      expect(mine.apps.map((a: { appName: string }) => a.appName)).toEqual([name]);
    });
  }

  it('an account not deployed yet (ERC-6492) pays: the settlement deploys it through the accepted factory, then moves the money', async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const s = salt();
    const account = await addressOf(FACTORY, owner.address, s);
    const chain = devChain(h);
    await chain.mint(account, 50_000n);
    expect(await isDeployed(account)).toBe(false);
    const deploy = { factory: FACTORY, data: encodeFunctionData({ abi: FACTORY_ABI, functionName: 'deploy', args: [owner.address, s] }) };
    const res = await payV1(smartAccountSigner(account, owner, deploy) as never)(
      `${h.url}/api/x402/apps`,
      jsonInit('POST', { name: 'smart-6492', html: html('Later') }),
    );
    expect(res.status).toBe(201);
    expect((await res.json()).receipt).toMatchObject({ wallet: account.toLowerCase(), status: 'settled' });
    expect(await isDeployed(account)).toBe(true);
    expect(await chain.balanceOf(account)).toBe(50_000n - PRICE);
  });

  // Sign-In-With-X (the x402 extension's own client, wrapFetchWithSIWx) with a smart account: the
  // proof is an EIP-191 message signed by the owner key, which the account accepts (ERC-1271), or
  // which it would accept once deployed (ERC-6492: the deployment simulated, never sent).
  it('a deployed contract wallet (ERC-1271) signs in with wrapFetchWithSIWx: it lists its app without paying; its owner key alone is another wallet', async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const account = await deployedAccount(owner);
    const chain = devChain(h);
    await chain.mint(account, 100_000n);
    const made = await payV2(smartAccountSigner(account, owner) as never)(
      `${h.url}/api/x402/apps`,
      jsonInit('POST', { name: 'smart-siwx', html: html('Signed') }),
    );
    expect(made.status).toBe(201);
    const balance = await chain.balanceOf(account);
    const mine = await wrapFetchWithSIWx(fetch, smartAccountSigner(account, owner) as never)(`${h.url}/api/x402/apps`);
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { apps: { appName: string }[] }).apps.map((a) => a.appName)).toEqual(['smart-siwx']);
    expect(await chain.balanceOf(account)).toBe(balance); // nothing paid
    // The owner's key signing for itself is the owner's own (empty) wallet, not the account.
    const ownKey = await wrapFetchWithSIWx(fetch, owner)(`${h.url}/api/x402/apps`);
    expect(await ownKey.json()).toEqual({ ok: true, apps: [] });
    // A stranger's key claiming the account: refused, nothing listed.
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = await wrapFetchWithSIWx(fetch, smartAccountSigner(account, stranger) as never)(`${h.url}/api/x402/apps`);
    expect(forged.status).toBe(402);
    expect(await forged.text()).not.toContain('smart-siwx');
  });

  it('an account not deployed yet (ERC-6492) signs in: the proof checks through its factory, nothing is deployed or charged', async () => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const s = salt();
    const account = await addressOf(FACTORY, owner.address, s);
    const deploy = { factory: FACTORY, data: encodeFunctionData({ abi: FACTORY_ABI, functionName: 'deploy', args: [owner.address, s] }) };
    const res = await wrapFetchWithSIWx(fetch, smartAccountSigner(account, owner, deploy) as never)(`${h.url}/api/x402/apps`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true, apps: [] });
    expect(await isDeployed(account)).toBe(false);
    // The same proof by a key the account would not accept: refused.
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = await wrapFetchWithSIWx(fetch, smartAccountSigner(account, stranger, deploy) as never)(`${h.url}/api/x402/apps`);
    expect(forged.status).toBe(402);
    expect(await isDeployed(account)).toBe(false);
  });

  it('refused before any work: a factory the service does not accept, and a signature the account does not accept; nothing charged', async () => {
    const chain = devChain(h);
    const owner = privateKeyToAccount(generatePrivateKey());
    const s = salt();
    const account = await addressOf(OTHER_FACTORY, owner.address, s);
    await chain.mint(account, 50_000n);
    const untrusted = { factory: OTHER_FACTORY, data: encodeFunctionData({ abi: FACTORY_ABI, functionName: 'deploy', args: [owner.address, s] }) };
    const viaOther = await payV1(smartAccountSigner(account, owner, untrusted) as never)(
      `${h.url}/api/x402/apps`,
      jsonInit('POST', { name: 'no-factory', html: html('No') }),
    );
    expect(viaOther.status).toBe(402);
    expect(JSON.stringify(await viaOther.json())).toMatch(/factory this service does not accept/);
    expect(await isDeployed(account)).toBe(false);
    expect(await chain.balanceOf(account)).toBe(50_000n);

    const deployed = await deployedAccount(owner);
    await chain.mint(deployed, 50_000n);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = await payV2(smartAccountSigner(deployed, stranger) as never)(
      `${h.url}/api/x402/apps`,
      jsonInit('POST', { name: 'forged', html: html('No') }),
    );
    expect(forged.status).toBe(402);
    expect(JSON.stringify(await forged.json())).toMatch(/signature does not match/);
    expect(await chain.balanceOf(deployed)).toBe(50_000n);
  });
});
