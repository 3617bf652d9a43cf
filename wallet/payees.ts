import fs from 'node:fs';
import { readWalletFile } from './wallet-file.js';
import path from 'node:path';
import { getAddress } from 'viem';
import { z } from 'zod';
import { writeFileAtomically } from './atomic-file.js';
import { WalletError } from './errors.js';
import { withFileLock } from './file-lock.js';

/** What a payment to a service goes to: who receives it, on which chain, in which token. */
export interface Payee {
  recipient: string;
  /** CAIP-2, e.g. eip155:8453. */
  network: string;
  asset: string;
}

const PinSchema = z.object({
  recipient: z.string(),
  network: z.string(),
  asset: z.string(),
  pinnedAt: z.number(),
  /** first-use: the first discovery answer seen (trust on first use); accepted: the person ran --accept-payee. */
  source: z.enum(['first-use', 'accepted']),
});
export type PinnedPayee = z.infer<typeof PinSchema>;

const PinsFileSchema = z.object({ version: z.literal(1), payees: z.record(z.string(), PinSchema) });
type PinsFile = z.infer<typeof PinsFileSchema>;

/** The command a person runs to accept a service's new payee (never a tool: the model cannot run it). */
export const acceptPayeeCommand = (serviceUrl: string) => `svc-mcp --accept-payee ${serviceUrl}`;

/** What differs between the pinned payee and the one seen, as "recipient 0xA → 0xB". */
function changes(pinned: Payee, seen: Payee): string[] {
  const out: string[] = [];
  if (getAddress(pinned.recipient) !== getAddress(seen.recipient)) out.push(`recipient ${getAddress(pinned.recipient)} → ${getAddress(seen.recipient)}`);
  if (pinned.network !== seen.network) out.push(`network ${pinned.network} → ${seen.network}`);
  if (getAddress(pinned.asset) !== getAddress(seen.asset)) out.push(`asset ${getAddress(pinned.asset)} → ${getAddress(seen.asset)}`);
  return out;
}

/**
 * The payee each service URL first published, kept beside the spend ledger (trust on first use, as
 * SSH's known hosts): a later discovery answer that names another recipient, network or asset is
 * refused before anything is signed, so a front that rewrites the service's answers (a compromised
 * proxy, plain http on a hostile network) gets no signature. Only the person changes a pin: with
 * `svc-mcp --accept-payee <url>`, or SVC_PAY_TO, which pins the recipient outright. The file is
 * shared by every svc-mcp of the user, rewritten atomically under its own lock.
 */
export class PayeePins {
  constructor(
    readonly file: string,
    private readonly now: () => number = Date.now,
  ) {}

  #read(): PinsFile {
    // A pin file we cannot read must stop payments: starting over would trust whatever answers next.
    return readWalletFile(
      this.file,
      PinsFileSchema,
      { version: 1, payees: {} },
      () =>
        new WalletError(
          'payee_changed',
          `The pinned payees file ${this.file} is not valid; nothing was signed or paid. The person moves it aside (the next payment then pins each service's payee afresh).`,
        ),
    );
  }

  #locked<T>(work: () => T): Promise<T> {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    return withFileLock(this.file, work);
  }

  async list(): Promise<Record<string, PinnedPayee>> {
    return this.#locked(() => this.#read().payees);
  }

  /**
   * Checks `seen` (the payee a service's discovery names) against the pin of `serviceUrl`, pinning it
   * when the service has none yet; `payTo` (SVC_PAY_TO) is the recipient the person named, checked
   * first. Throws `payee_changed`, saying what changed and how the person accepts it, on any difference.
   */
  async verify(serviceUrl: string, seen: Payee, payTo?: string): Promise<PinnedPayee> {
    if (payTo && getAddress(payTo) !== getAddress(seen.recipient))
      throw new WalletError(
        'payee_changed',
        `Refused to pay ${serviceUrl}: it names the recipient ${getAddress(seen.recipient)}, but SVC_PAY_TO (the person's setting) pins ${getAddress(payTo)}. Nothing was signed or paid. Do not retry: tell the user. If the service really changed its recipient, the person changes SVC_PAY_TO and restarts the MCP server.`,
        'none',
        { pinned: getAddress(payTo), seen: getAddress(seen.recipient) },
      );
    return this.#locked(() => {
      const data = this.#read();
      const pinned = data.payees[serviceUrl];
      if (!pinned) {
        const pin: PinnedPayee = { ...normalise(seen), pinnedAt: this.now(), source: 'first-use' };
        data.payees[serviceUrl] = pin;
        this.#write(data);
        return pin;
      }
      const changed = changes(pinned, seen);
      if (changed.length === 0) return pinned;
      throw new WalletError(
        'payee_changed',
        `Refused to pay ${serviceUrl}: its payee changed since ${new Date(pinned.pinnedAt).toISOString()} (${changed.join('; ')}). Nothing was signed or paid. Do not retry: tell the user. Someone between this server and the service may be rewriting its answers; if the service really changed, the person (not the agent) accepts it by running: ${acceptPayeeCommand(serviceUrl)} (then restarts the MCP server).`,
        'none',
        { pinned, seen: normalise(seen), changed },
      );
    });
  }

  /** The person accepts `seen` as the payee of `serviceUrl` (svc-mcp --accept-payee); returns the pin it replaced. */
  async accept(serviceUrl: string, seen: Payee): Promise<PinnedPayee | undefined> {
    return this.#locked(() => {
      const data = this.#read();
      const before = data.payees[serviceUrl];
      data.payees[serviceUrl] = { ...normalise(seen), pinnedAt: this.now(), source: 'accepted' };
      this.#write(data);
      return before;
    });
  }

  #write(data: PinsFile): void {
    writeFileAtomically(this.file, JSON.stringify(data, null, 1));
  }
}

function normalise(p: Payee): Payee {
  return { recipient: getAddress(p.recipient), network: p.network, asset: getAddress(p.asset) };
}
