import fs from 'node:fs';
import { inspect } from 'node:util';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { WalletError } from './errors.js';

const HEX_KEY = /^(0x)?[0-9a-fA-F]{64}$/;

/**
 * Holds the private key so that it can never be printed: JSON, util.inspect and string conversion
 * all yield "[redacted]". The only thing that reads it is `toAccount`, which hands it to viem.
 */
export class SecretKey {
  readonly #hex: `0x${string}`;
  private constructor(hex: `0x${string}`) {
    this.#hex = hex;
  }
  static parse(text: string, source: string): SecretKey {
    const t = text.trim();
    // The message names the source, never any part of the value.
    if (!HEX_KEY.test(t))
      throw new WalletError('bad_key', `${source} does not hold a 32-byte hex private key (64 hex digits, optional 0x). Fix the value; nothing was paid.`);
    return new SecretKey((t.startsWith('0x') ? t : `0x${t}`) as `0x${string}`);
  }
  static fromFile(file: string): SecretKey {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new WalletError(
        'bad_key',
        `SVC_WALLET_KEY_FILE ${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'}). Fix the path; nothing was paid.`,
      );
    }
    return SecretKey.parse(text, `SVC_WALLET_KEY_FILE ${file}`);
  }
  toAccount(): PrivateKeyAccount {
    return privateKeyToAccount(this.#hex);
  }
  toString(): string {
    return '[redacted]';
  }
  toJSON(): string {
    return '[redacted]';
  }
  [inspect.custom](): string {
    return 'SecretKey([redacted])';
  }
}
