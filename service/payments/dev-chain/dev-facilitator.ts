import { encodeFunctionData, type Address, type Hex, type TransactionReceipt } from 'viem';
import { USDC_ADDRESS } from '../../../shared/agent-api/network.js';
import type { Logger } from '../../kernel/logger.js';
import { ChainFacilitator } from '../chain-facilitator.js';
import type { DevFacilitator, FacilitatorSettleResult, FacilitatorVerifyResult, SupportedKind, VerifiedPayment } from '../facilitator.js';
import { AppError } from '../../kernel/app-error.js';
import { USDC_ABI } from '../../../shared/usdc-abi.js';
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
    if (!this.started) {
      this.started = this.launch(this.options.port).then((s) => {
        this.options.log?.info('x402 dev chain started', { rpcUrl: s.anvil.rpcUrl, pid: s.anvil.pid, usdc: USDC_ADDRESS });
        return s;
      });
      this.started.catch((e: Error) => {
        this.startError = e;
        this.options.log?.error('x402 dev chain could not start; paid Agent API calls are refused', { error: e.message });
      });
    }
    return this.started;
  }

  /** anvil on `port` (its saved state loaded) with DevUSDC in place, watched from then on. */
  private async launch(port: number | undefined): Promise<Started> {
    const anvil = await this.startOnPort(port);
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
    } catch (e) {
      await chain.close();
      await anvil.stop();
      throw e;
    }
    const started = { anvil, chain };
    this.current = started;
    void anvil.exited.then((how) => this.onExit(started, how));
    return started;
  }

  /** Delay before the first attempt to start a chain that died again; doubled per failed attempt (to 5 s). */
  restartDelayMs = 1000;
  /** Why the chain is down right now (anvil died and is being started again); undefined while it runs. */
  private down: string | undefined;
  private restarting: Promise<void> | undefined;
  /** Ends the wait before the next restart attempt at once (close()). */
  private wake: (() => void) | undefined;

  /**
   * Supervision: anvil that exits while the service runs (killed, crashed) is started again on the
   * same port from the state it saved (every STATE_INTERVAL_SECONDS: balances and nonces up to then
   * are kept). Meanwhile `ping` fails (/readyz: chain down) and paid calls answer 503 with
   * Retry-After, naming the chain; nothing is charged.
   */
  private onExit(s: Started, how: { code: number | null; signal: string | null }): void {
    if (this.closed || this.current !== s) return;
    this.down = `the local dev chain (anvil, pid ${s.anvil.pid}) stopped (${how.signal ?? `exit code ${how.code}`}) and is being started again from its saved state`;
    this.options.log?.warn('x402 dev chain (anvil) stopped unexpectedly; starting it again from its saved state', {
      pid: s.anvil.pid,
      code: how.code,
      signal: how.signal,
    });
    void s.chain.close();
    const port = Number(new URL(s.anvil.rpcUrl).port);
    this.restarting = this.restart(port);
  }

  private async restart(port: number): Promise<void> {
    for (let attempt = 0; !this.closed; attempt++) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(this.restartDelayMs * 2 ** attempt, Math.max(5000, this.restartDelayMs)));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.closed) return;
      try {
        const s = await this.launch(port);
        if (this.closed) {
          await s.chain.close();
          await s.anvil.stop();
          return;
        }
        this.started = Promise.resolve(s);
        this.down = undefined;
        this.options.log?.info('x402 dev chain started again', { rpcUrl: s.anvil.rpcUrl, pid: s.anvil.pid, attempt: attempt + 1 });
        return;
      } catch (e) {
        this.options.log?.warn('x402 dev chain did not start again; retrying', { error: (e as Error).message, attempt: attempt + 1 });
      }
    }
  }

  /** The configured port; when another process holds it, any free port (said in portNote and the start line). */
  private async startOnPort(port: number | undefined): Promise<AnvilProcess> {
    const { anvilPath: binary, statePath } = this.options;
    try {
      return await startAnvil({ binary, port, statePath });
    } catch (e) {
      if (!port || !/in use|AddrInUse/i.test((e as Error).message)) throw e;
      this.portNote = `port ${port} is taken (SVC_DEV_CHAIN_PORT), so the chain listens on another one: set SVC_RPC_URL for wallets started before`;
      this.options.log?.warn('x402 dev chain port taken; using a free port', { port });
      return startAnvil({ binary, port: 0, statePath });
    }
  }

  /** The 503 a paid call gets while the chain is down: it names the chain, never the database. */
  private pausedError(): AppError {
    return new AppError(
      'service_unavailable',
      `payments are paused: ${this.down ?? 'the local dev chain (anvil) does not answer'}. Nothing was charged; retry in a few seconds.`,
      undefined,
      { 'retry-after': '3' },
    );
  }

  /** Runs `op` on the chain; a chain that stopped answering (anvil gone) is the 503 above. */
  private async onChain<T>(op: (chain: ChainFacilitator) => Promise<T>): Promise<T> {
    const chain = await this.chain();
    try {
      return await op(chain);
    } catch (e) {
      if (this.down || isConnectionRefused(e)) throw this.pausedError();
      throw e;
    }
  }

  private async chain(): Promise<ChainFacilitator> {
    if (this.down) throw this.pausedError();
    try {
      return (await this.start()).chain;
    } catch (e) {
      throw new AppError(
        'service_unavailable',
        `payments are unavailable: the local dev chain (anvil) could not start: ${(e as Error).message}. ` +
          'Options: set SVC_X402_ANVIL_PATH to an anvil binary, or settle for real with SVC_X402_MODE=chain ' +
          '(SVC_X402_RPC_URL + SVC_X402_SETTLER_KEY) or SVC_X402_MODE=remote (SVC_X402_FACILITATOR_URL). Nothing was charged.',
      );
    }
  }

  get unavailableReason(): string | undefined {
    return this.startError?.message;
  }

  async verify(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    return this.onChain((c) => c.verify(p));
  }
  async verifySignature(p: VerifiedPayment): Promise<FacilitatorVerifyResult> {
    return this.onChain((c) => c.verifySignature(p));
  }
  async verifyMessage(address: `0x${string}`, message: string, signature: `0x${string}`): Promise<boolean> {
    return (await this.chain()).verifyMessage(address, message, signature);
  }
  async settle(p: VerifiedPayment, onSubmitted?: (txHash: string) => void): Promise<FacilitatorSettleResult> {
    return (await this.chain()).settle(p, onSubmitted);
  }
  /** Asks the running chain; never starts it (the service starts it with the payments). */
  async ping(): Promise<void> {
    if (this.down) throw new Error(this.down);
    if (!this.current) throw new Error(this.startError?.message ?? 'the dev chain is not started');
    await this.current.chain.ping();
  }
  async supported(): Promise<{ kinds: SupportedKind[] }> {
    return this.onChain((c) => c.supported());
  }
  async authorizationUsed(from: string, nonce: string): Promise<boolean> {
    return this.onChain((c) => c.authorizationUsed(from, nonce));
  }
  async findSettlement(from: string, nonce: string): Promise<string | undefined> {
    return this.onChain((c) => c.findSettlement(from, nonce));
  }
  async balanceOf(address: string): Promise<bigint> {
    return this.onChain((c) => c.balanceOf(address));
  }
  async mint(to: string, atomic: bigint): Promise<string> {
    return this.onChain((c) => (c as DevChain).mint(to, atomic));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.restarting;
    const s = await this.started?.catch(() => undefined);
    await s?.chain.close();
    await s?.anvil.stop();
  }
}

/** A request that found nothing listening: the chain's process is gone. */
function isConnectionRefused(err: unknown): boolean {
  let e: unknown = err;
  for (let i = 0; i < 6 && e; i++) {
    if ((e as { code?: unknown }).code === 'ECONNREFUSED') return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
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
