import {
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeFunctionData,
  hashTypedData,
  isAddressEqual,
  parseErc6492Signature,
  parseSignature,
  WaitForTransactionReceiptTimeoutError,
  zeroAddress,
  type Address,
  type Hex,
  type PublicClient,
  type WalletClient,
  type Chain,
  type TransactionReceipt,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { BASE_CHAIN_ID, USDC_ADDRESS, X402_NETWORK, X402_NETWORK_V1 } from '../../shared/agent-api/network.js';
import type { Facilitator, FacilitatorSettleResult, FacilitatorVerifyResult, VerifiedPayment } from './facilitator.js';
import { SettlerSends, type FilledTransaction, type SettlerSend, type SettlerTransaction } from './settler-sends.js';
import { signSettlerTransaction } from './settler-signature.js';
import { jsonRpcTransport, type JsonRpcTransport } from './json-rpc-transport.js';
import { USDC_ABI } from '../../shared/usdc-abi.js';
import { transferAuthorizationTypedData } from './verify-payment.js';
import type { Logger } from '../kernel/logger.js';

export interface ChainFacilitatorOptions {
  rpcUrl: string;
  settlerKey: Hex;
  /** How long to wait for the settlement to be mined. */
  receiptTimeoutMs?: number;
  /**
   * How long a transaction's receipt is still asked for once its nonce is seen spent, before it is
   * called replaced (default 3 s; see settlerReceipt).
   */
  replacedAfterMs?: number;
  /** How often a receipt not yet there is asked for again (default: viem's, half of Base's 2 s block time). */
  pollingIntervalMs?: number;
  /** Requests made in the same turn of the event loop go to the node as one JSON-RPC batch (json-rpc-transport.ts). */
  rpcBatch?: boolean;
  /** Told when a send lost the race for the settler's nonce and is sent again. */
  log?: Logger;
  /** Lower-case factory addresses an ERC-6492 signature may deploy a smart account through (x402-config.ts). */
  erc6492Factories?: string[];
}

const ERC1271_MAGIC = '0x1626ba7e';
const ERC1271_ABI = [
  {
    name: 'isValidSignature',
    type: 'function',
    stateMutability: 'view',
    inputs: [
      { name: 'hash', type: 'bytes32' },
      { name: 'signature', type: 'bytes' },
    ],
    outputs: [{ name: '', type: 'bytes4' }],
  },
] as const;

/** A signature as sent (maybe ERC-6492-wrapped): the factory call that deploys the account, and the inner signature. */
interface SmartSignature {
  deployment?: { factory: Address; data: Hex };
  signature: Hex;
}

function unwrapErc6492(signature: Hex): SmartSignature {
  const parsed = parseErc6492Signature(signature);
  const wrapped = parsed.address && parsed.data && !isAddressEqual(parsed.address, zeroAddress);
  return wrapped ? { deployment: { factory: parsed.address!, data: parsed.data! }, signature: parsed.signature } : { signature };
}

type AuthorizationArgs = readonly [Address, Address, bigint, bigint, bigint, Hex];

/** A 65-byte signature as (v, r, s); anything longer (a smart account's) as bytes: USDC v2.2 takes both. */
function signatureArgs(base: AuthorizationArgs, signature: Hex) {
  if (signature.length !== 132) return [...base, signature] as const;
  const sig = parseSignature(signature);
  const v = sig.v !== undefined ? Number(sig.v) : 27 + (sig.yParity ?? 0);
  return [...base, v, sig.r, sig.s] as const;
}

/**
 * Settles `transferWithAuthorization` on an EVM JSON-RPC endpoint from a settler key (which pays the
 * gas). Checks the chain id at start, and balance and authorizationState before every settlement.
 */
export class ChainFacilitator implements Facilitator {
  readonly kind: 'chain' | 'dev' = 'chain';
  protected readonly chain: Chain;
  protected readonly publicClient: PublicClient;
  protected readonly wallet: WalletClient;
  protected readonly account: PrivateKeyAccount;
  private readonly sends: SettlerSends;
  /** Turns of the settler's sends so far, and the transactions they sent. */
  get settlerCounts(): Readonly<SettlerSends['counts']> {
    return this.sends.counts;
  }
  private readonly rpc: JsonRpcTransport;
  private chainChecked: Promise<void> | undefined;

  constructor(protected readonly options: ChainFacilitatorOptions) {
    this.chain = defineChain({
      id: BASE_CHAIN_ID,
      name: 'Base',
      // Base makes a block every 2 s. viem polls for a receipt every blockTime / 2 (1 s); without a
      // block time it polls every 4 s, which added up to 4 s to every settlement that was not mined
      // by the time it was first asked for.
      blockTime: 2_000,
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [options.rpcUrl] } },
    });
    this.account = privateKeyToAccount(options.settlerKey);
    this.rpc = jsonRpcTransport(options.rpcUrl, { batch: options.rpcBatch });
    this.publicClient = createPublicClient({ chain: this.chain, transport: this.rpc.transport, pollingInterval: options.pollingIntervalMs }) as PublicClient;
    this.wallet = createWalletClient({ chain: this.chain, account: this.account, transport: this.rpc.transport });
    this.sends = new SettlerSends({
      fill: (request) => this.fill(request),
      signAndSend: async (transaction) => this.sendSigned(await signSettlerTransaction(transaction, options.settlerKey)),
      log: options.log,
    });
  }

  /** The RPC must be chain 8453: the signatures we accept bind that chain id. */
  protected ensureChain(): Promise<void> {
    this.chainChecked ??= this.publicClient.getChainId().then((id) => {
      if (id !== BASE_CHAIN_ID) throw new Error(`SVC_X402_RPC_URL is chain ${id}; payments are signed for chain ${BASE_CHAIN_ID} (Base)`);
    });
    this.chainChecked.catch(() => (this.chainChecked = undefined));
    return this.chainChecked;
  }

  async verify(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    await this.ensureChain();
    const a = p.authorization;
    const [balance, used] = await Promise.all([
      this.publicClient.readContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName: 'balanceOf', args: [a.from as Address] }),
      this.publicClient.readContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName: 'authorizationState', args: [a.from as Address, a.nonce as Hex] }),
    ]);
    if (used) return { isValid: false, invalidReason: 'nonce_already_used' };
    if (balance < BigInt(a.value)) return { isValid: false, invalidReason: 'insufficient_funds' };
    return { isValid: true };
  }

  async verifySignature(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    await this.ensureChain();
    const from = p.authorization.from as Address;
    const { deployment, signature } = unwrapErc6492(p.signature);
    const typedData = transferAuthorizationTypedData(p.authorization);
    if (await this.isDeployed(from)) {
      // ERC-1271: the account itself says whether it signed the digest.
      const answer = await this.publicClient
        .readContract({ address: from, abi: ERC1271_ABI, functionName: 'isValidSignature', args: [hashTypedData(typedData), signature] })
        .catch(() => undefined);
      return answer === ERC1271_MAGIC ? { isValid: true } : { isValid: false, invalidReason: 'invalid_signature' };
    }
    if (!deployment) return { isValid: false, invalidReason: 'invalid_signature' }; // no code and no way to deploy: a plain key that did not sign
    if (!this.factoryAllowed(deployment.factory)) return { isValid: false, invalidReason: 'factory_not_allowed' };
    // ERC-6492: viem's universal validator deploys the account inside an eth_call and asks it (nothing is sent).
    const ok = await this.publicClient.verifyTypedData({ address: from, ...typedData, signature: p.signature }).catch(() => false);
    return ok ? { isValid: true } : { isValid: false, invalidReason: 'invalid_signature' };
  }

  async verifyMessage(address: Address, message: string, signature: Hex): Promise<boolean> {
    await this.ensureChain();
    // viem's universal validator: ERC-1271 for a deployed account, ERC-6492 (deployment simulated) otherwise.
    return this.publicClient.verifyMessage({ address, message, signature }).catch(() => false);
  }

  private async isDeployed(address: Address): Promise<boolean> {
    const code = await this.publicClient.getCode({ address });
    return Boolean(code && code !== '0x');
  }

  private factoryAllowed(factory: Address): boolean {
    return (this.options.erc6492Factories ?? []).includes(factory.toLowerCase());
  }

  /**
   * An ERC-6492 signature of an account not deployed yet: the settler deploys it through its
   * (accepted) factory first, as the x402 reference facilitator does. Throws when that fails.
   */
  private async deployFirst(from: Address, deployment: SmartSignature['deployment']): Promise<void> {
    if (!deployment || (await this.isDeployed(from))) return;
    if (!this.factoryAllowed(deployment.factory)) throw new Error('factory_not_allowed');
    const receipt = await this.settlerReceipt(await this.sendFromSettler({ to: deployment.factory, data: deployment.data }));
    if (receipt === 'replaced' || receipt.status !== 'success' || !(await this.isDeployed(from))) throw new Error('smart_wallet_deployment_failed');
  }

  async settle(p: VerifiedPayment, onSubmitted?: (txHash: string) => void): Promise<FacilitatorSettleResult> {
    await this.ensureChain();
    const a = p.authorization;
    const { deployment, signature } = unwrapErc6492(p.signature);
    try {
      await this.deployFirst(a.from as Address, deployment);
    } catch (e) {
      return { success: false, transaction: '', errorReason: (e as Error).message };
    }
    const base = [a.from as Address, a.to as Address, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce as Hex] as const;
    const data = encodeFunctionData({ abi: USDC_ABI, functionName: 'transferWithAuthorization', args: signatureArgs(base, signature) });
    let sent: SettlerTransaction;
    try {
      sent = await this.sendFromSettler({ to: USDC_ADDRESS, data });
    } catch (e) {
      return { success: false, transaction: '', errorReason: revertReason(e) };
    }
    const { hash } = sent;
    onSubmitted?.(hash);
    const receipt = await this.settlerReceipt(sent);
    if (receipt === 'replaced') return { success: false, transaction: hash, errorReason: 'transaction_replaced' };
    if (receipt.status !== 'success') return { success: false, transaction: hash, errorReason: 'transaction_reverted' };
    return { success: true, transaction: hash };
  }

  /**
   * The receipt of a transaction just sent, asked for at once (a chain that mines on arrival, like the
   * dev chain, has it) and then every polling interval; or `replaced` once its nonce is spent by a
   * transaction that is not this one (another sender of the settler key used it for another call),
   * whose receipt says nothing of this payment. Knowing the nonce we signed, that is one
   * `eth_getTransactionCount`: viem's own replacement check must first have seen the transaction
   * pending, and one replaced before that was waited for until the timeout. A spent nonce is not
   * proof by itself: anvil can count a mined transaction's nonce before it serves the receipt
   * (foundry-rs/foundry#10944; a CI run saw a mint called replaced while it was mined), so the receipt
   * is asked for a little longer (`replacedAfterMs`) before the transaction is called replaced.
   */
  protected async settlerReceipt({ hash, nonce, receipt: returned }: SettlerTransaction): Promise<TransactionReceipt | 'replaced'> {
    if (returned) return returned;
    const deadline = Date.now() + (this.options.receiptTimeoutMs ?? 60_000);
    /** Set once the nonce is seen spent without this receipt: when to call the transaction replaced. */
    let replacedAt: number | undefined;
    for (;;) {
      const receipt = await this.publicClient.getTransactionReceipt({ hash }).catch(() => undefined);
      if (receipt) return receipt;
      if (replacedAt === undefined) {
        const spent = await this.publicClient.getTransactionCount({ address: this.account.address, blockTag: 'latest' });
        // Mined between the two reads (asked again at once), or the nonce went to another transaction.
        if (spent > nonce) {
          replacedAt = Date.now() + (this.options.replacedAfterMs ?? 3_000);
          continue;
        }
        if (Date.now() >= deadline) throw new WaitForTransactionReceiptTimeoutError({ hash });
      } else if (Date.now() >= replacedAt) return 'replaced';
      await new Promise((r) => setTimeout(r, replacedAt === undefined ? this.publicClient.pollingInterval : Math.min(100, this.publicClient.pollingInterval)));
    }
  }

  /**
   * Sends a transaction from the settler key, in the next turn of its sends (settler-sends.ts): the
   * node fills gas (a simulation: a settlement that would revert fails here, before anything is sent),
   * pending nonce and fees, the turn signs its sends with consecutive nonces and sends them, two round
   * trips a turn where a plain `writeContract` takes five a transaction.
   */
  protected async sendFromSettler(request: SettlerSend): Promise<SettlerTransaction> {
    await this.ensureChain();
    return this.sends.send(request);
  }

  /**
   * One `eth_fillTransaction`: gas, pending nonce and fees (viem's `prepareTransactionRequest` with all
   * three; a node without that method is asked through viem's separate reads, remembered after the
   * first refusal).
   */
  private async fill(request: SettlerSend): Promise<FilledTransaction> {
    return (await this.wallet.prepareTransactionRequest({
      ...request,
      account: this.account,
      chain: this.chain,
      chainId: this.chain.id,
      type: 'eip1559',
      parameters: ['gas', 'fees', 'nonce'],
    })) as FilledTransaction;
  }

  /**
   * `eth_sendRawTransaction`: the hash once the node took the transaction; its receipt comes later
   * (settlerReceipt). Not `eth_sendRawTransactionSync` (EIP-7966), which answers once it is mined:
   * a turn of the settler's sends would then hold every later settlement for a block.
   */
  protected async sendSigned(serializedTransaction: Hex): Promise<{ hash: Hex; receipt?: TransactionReceipt }> {
    return { hash: await this.wallet.sendRawTransaction({ serializedTransaction }) };
  }

  async ping(): Promise<void> {
    await this.publicClient.getBlockNumber({ cacheTime: 0 });
  }

  async supported() {
    return {
      kinds: [
        { x402Version: 1, scheme: 'exact', network: X402_NETWORK_V1 },
        { x402Version: 2, scheme: 'exact', network: X402_NETWORK },
      ],
    };
  }

  async authorizationUsed(from: string, nonce: string): Promise<boolean> {
    return this.publicClient.readContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName: 'authorizationState', args: [from as Address, nonce as Hex] });
  }

  /** Hash of the transaction that used `(from, nonce)`, from the AuthorizationUsed event. */
  async findSettlement(from: string, nonce: string): Promise<string | undefined> {
    const logs = await this.publicClient.getContractEvents({
      address: USDC_ADDRESS,
      abi: USDC_ABI,
      eventName: 'AuthorizationUsed',
      args: { authorizer: from as Address, nonce: nonce as Hex },
      fromBlock: 0n,
    });
    return logs[0]?.transactionHash ?? undefined;
  }

  async balanceOf(address: string): Promise<bigint> {
    return this.publicClient.readContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName: 'balanceOf', args: [address as Address] });
  }

  async close(): Promise<void> {
    this.rpc.close();
  }
}

function revertReason(e: unknown): string {
  const msg = e instanceof Error ? ((e as { shortMessage?: string }).shortMessage ?? e.message) : String(e);
  if (/authorization is used/i.test(msg)) return 'nonce_already_used';
  if (/exceeds balance/i.test(msg)) return 'insufficient_funds';
  if (/expired/i.test(msg)) return 'authorization_expired';
  if (/not yet valid/i.test(msg)) return 'authorization_not_yet_valid';
  if (/invalid signature/i.test(msg)) return 'invalid_signature';
  return `settlement_failed: ${msg.replace(/\n.*$/s, '').slice(0, 200)}`;
}
