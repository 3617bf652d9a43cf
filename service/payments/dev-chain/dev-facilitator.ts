import { encodeFunctionData, type Address, type Hex, type TransactionReceipt } from 'viem';
import { USDC_ADDRESS } from '../../../shared/agent-api/network.js';
import type { Logger } from '../../logger.js';
import { ChainFacilitator } from '../chain-facilitator.js';
import type { DevFacilitator, FacilitatorSettleResult, FacilitatorVerifyResult, SupportedKind, VerifiedPayment } from '../facilitator.js';
import { AppError } from '../../http/app-error.js';
import { USDC_ABI } from '../usdc-abi.js';
import { DEV_SETTLER_KEY } from '../x402-config.js';
import { startAnvil, type AnvilProcess } from './anvil.js';
import { loadDevUsdcArtifact } from './artifact.js';

interface Started {
  anvil: AnvilProcess;
  chain: ChainFacilitator;
}

/**
 * The embedded development chain: anvil (chain id 8453, loopback) with our DevUSDC placed at the
 * real USDC address by anvil_setCode. Payments are really signed, verified and settled on it; the
 * txHash in a receipt is a mined transaction of this chain. Started on first use (or `start()`),
 * stopped by `close()`. If anvil cannot start, paid calls are refused with 503 — never faked.
 */
export class DevChainFacilitator implements DevFacilitator {
  readonly kind = 'dev' as const;
  private started: Promise<Started> | undefined;
  private startError: Error | undefined;
  private closed = false;

  /** Set when the configured port was taken and the chain listens elsewhere. */
  portNote: string | undefined;
  constructor(private readonly options: { anvilPath?: string; log?: Logger; port?: number; statePath?: string; erc6492Factories?: string[] } = {}) {}

  get rpcUrl(): string {
    return this.current?.anvil.rpcUrl ?? '';
  }

  /** The chain's process, once started (`npm run bench payments` reads its CPU time). */
  get pid(): number | undefined {
    return this.current?.anvil.pid;
  }
  private current: Started | undefined;

  /** Turns of the settler's sends so far, and the transactions they sent (`npm run bench payments`). */
  get settlerCounts(): { turns: number; sent: number } {
    return { ...(this.current?.chain.settlerCounts ?? { turns: 0, sent: 0 }) };
  }

  start(): Promise<Started> {
    if (this.closed) return Promise.reject(new Error('dev chain closed'));
    this.started ??= (async () => {
      const anvil = await this.startOnPort();
      // anvil mines a transaction as it arrives: a receipt not there at once is there within
      // milliseconds, not the next Base block (a 1 s wait on some settlements otherwise).
      const chain = new DevChain({
        rpcUrl: anvil.rpcUrl,
        settlerKey: DEV_SETTLER_KEY,
        erc6492Factories: this.options.erc6492Factories,
        pollingIntervalMs: 50,
        rpcBatch: true,
      });
      try {
        await chain.placeCode(USDC_ADDRESS, loadDevUsdcArtifact().deployedBytecode);
        this.current = { anvil, chain };
        this.options.log?.info('x402 dev chain started', { rpcUrl: anvil.rpcUrl, pid: anvil.pid, usdc: USDC_ADDRESS });
        return this.current;
      } catch (e) {
        await chain.close();
        await anvil.stop();
        throw e;
      }
    })();
    this.started.catch((e: Error) => {
      this.startError = e;
      this.options.log?.error('x402 dev chain could not start; paid Agent API calls are refused', { error: e.message });
    });
    return this.started;
  }

  /** The configured port; when another process holds it, any free port (said in portNote and the start line). */
  private async startOnPort(): Promise<AnvilProcess> {
    const { anvilPath: binary, port, statePath } = this.options;
    try {
      return await startAnvil({ binary, port, statePath });
    } catch (e) {
      if (!port || !/in use|AddrInUse/i.test((e as Error).message)) throw e;
      this.portNote = `port ${port} is taken (SVC_DEV_CHAIN_PORT), so the chain listens on another one: set SVC_RPC_URL for wallets started before`;
      this.options.log?.warn('x402 dev chain port taken; using a free port', { port });
      return startAnvil({ binary, port: 0, statePath });
    }
  }

  private async chain(): Promise<ChainFacilitator> {
    try {
      return (await this.start()).chain;
    } catch (e) {
      throw new AppError(
        'service_unavailable',
        `payments are unavailable: the local dev chain (anvil) could not start: ${(e as Error).message}. ` +
          'Options: install @foundry-rs/anvil (or set SVC_X402_ANVIL_PATH), or settle for real with SVC_X402_MODE=chain ' +
          '(SVC_X402_RPC_URL + SVC_X402_SETTLER_KEY) or SVC_X402_MODE=remote (SVC_X402_FACILITATOR_URL). Nothing was charged.',
      );
    }
  }

  get unavailableReason(): string | undefined {
    return this.startError?.message;
  }

  async verify(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    return (await this.chain()).verify(p);
  }
  async verifySignature(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    return (await this.chain()).verifySignature(p);
  }
  async settle(p: VerifiedPayment, onSubmitted?: (txHash: string) => void): Promise<FacilitatorSettleResult> {
    return (await this.chain()).settle(p, onSubmitted);
  }
  /** Asks the running chain; never starts it (the service starts it with the payments). */
  async ping(): Promise<void> {
    if (!this.current) throw new Error(this.startError?.message ?? 'the dev chain is not started');
    await this.current.chain.ping();
  }
  async supported(): Promise<{ kinds: SupportedKind[] }> {
    return (await this.chain()).supported();
  }
  async authorizationUsed(from: string, nonce: string): Promise<boolean> {
    return (await this.chain()).authorizationUsed(from, nonce);
  }
  async findSettlement(from: string, nonce: string): Promise<string | undefined> {
    return (await this.chain()).findSettlement(from, nonce);
  }
  async balanceOf(address: string): Promise<bigint> {
    return (await this.chain()).balanceOf(address);
  }
  async mint(to: string, atomic: bigint): Promise<string> {
    return ((await this.chain()) as DevChain).mint(to, atomic);
  }

  async close(): Promise<void> {
    this.closed = true;
    const s = await this.started?.catch(() => undefined);
    await s?.chain.close();
    await s?.anvil.stop();
  }
}

class DevChain extends ChainFacilitator {
  override readonly kind = 'dev' as const;

  /**
   * anvil mines a transaction as it arrives, so `eth_sendRawTransactionSync` (EIP-7966) answers with
   * the receipt at once: one request where sending and then asking for the receipt took two, and four
   * when the receipt was asked for before anvil had stored it (two sends in five).
   */
  protected override async sendSigned(serializedTransaction: Hex): Promise<{ hash: Hex; receipt: TransactionReceipt }> {
    const receipt = await this.wallet.sendRawTransactionSync({ serializedTransaction });
    return { hash: receipt.transactionHash, receipt };
  }

  /** Places contract code at an address (anvil_setCode): our DevUSDC at the real USDC address. */
  async placeCode(address: Address, code: Hex): Promise<void> {
    await this.publicClient.request({ method: 'anvil_setCode' as never, params: [address, code] as never });
  }
  async mint(to: string, atomic: bigint): Promise<string> {
    const sent = await this.sendFromSettler({
      to: USDC_ADDRESS,
      data: encodeFunctionData({ abi: USDC_ABI, functionName: 'mint', args: [to as Address, atomic] }),
    });
    const receipt = await this.settlerReceipt(sent);
    if (receipt === 'replaced') throw new Error(`mint replaced by another transaction of the settler: ${sent.hash}; mint again`);
    if (receipt.status !== 'success') throw new Error(`mint reverted: ${sent.hash}`);
    return sent.hash;
  }
}
