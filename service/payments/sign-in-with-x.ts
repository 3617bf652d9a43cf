import { randomBytes } from 'node:crypto';
import {
  SIGN_IN_WITH_X,
  buildSIWxSchema,
  parseSIWxHeader,
  type SIWxExtension,
  type SIWxPayload,
  validateSIWxMessage,
  verifySIWxSignature,
} from '@x402/extensions/sign-in-with-x';
import { lt } from 'drizzle-orm';
import { verifyMessage } from 'viem';
import { PAYMENT_HEADERS, X402_NETWORK } from '../../shared/agent-api/network.js';
import type { Config } from '../kernel/config.js';
import type { DbOrTx } from '../db/client.js';
import { siwxNonces } from '../db/schema/index.js';
import type { Facilitator } from './facilitator.js';
import { PaymentRequiredError } from './payment-required.js';

/** The request header a Sign-In-With-X proof arrives in (base64 JSON of the signed SIWE message's fields). */
export const SIWX_HEADER = PAYMENT_HEADERS.signInWithX;
/** How long a challenge (and so a proof signed for it) is accepted: the library's default issuedAt age. */
export const SIWX_MAX_AGE_SECONDS = 300;
const STATEMENT = 'Sign in to svc with this wallet: a free call that only proves who you are. Nothing is paid.';

/**
 * The `sign-in-with-x` extension declared in the PAYMENT-REQUIRED of a free call that needs the
 * wallet's identity (list_apps): the CAIP-122 (SIWE) message fields the wallet signs, bound to this
 * service's origin and to the paid request's URL, with a fresh nonce and a five-minute expiry. Chain
 * `eip155:8453` is Base, and the dev chain too (anvil runs with Base's chain id), so one entry names both.
 */
export function siwxDeclaration(config: Config, resource: string, now: Date): Record<string, SIWxExtension> {
  const origin = new URL(config.baseUrl);
  return {
    [SIGN_IN_WITH_X]: {
      info: {
        domain: origin.host,
        uri: resource,
        statement: STATEMENT,
        version: '1',
        nonce: randomBytes(16).toString('hex'),
        issuedAt: now.toISOString(),
        expirationTime: new Date(now.getTime() + SIWX_MAX_AGE_SECONDS * 1000).toISOString(),
        resources: [resource],
      },
      supportedChains: [{ chainId: X402_NETWORK, type: 'eip191' }],
      schema: buildSIWxSchema(),
    },
  };
}

/**
 * Checks a SIGN-IN-WITH-X header and returns the wallet it proves (lower-case), claiming its nonce:
 * the message must name this service (domain = its host, URI on its origin), be recent (issued within
 * five minutes) and unexpired, be for chain eip155:8453, and be signed by its address: a plain key
 * (EIP-191, checked offline), or a smart account (ERC-1271 deployed, ERC-6492 not yet: asked of the
 * chain, as payments are). The nonce is then claimed in the database, so the same proof is refused
 * the second time on every node. The parsing and checks are @x402/extensions' own.
 */
export async function verifySignInWithX(
  deps: { config: Config; db: DbOrTx; facilitator: Facilitator; clock: { now(): Date } },
  header: string,
): Promise<string> {
  let payload: SIWxPayload;
  try {
    payload = parseSIWxHeader(header.trim());
  } catch (e) {
    throw new PaymentRequiredError('invalid_siwx_header', `${SIWX_HEADER} is not a Sign-In-With-X proof: ${(e as Error).message}`);
  }
  const origin = new URL(deps.config.baseUrl);
  const valid = await validateSIWxMessage(payload, origin, { maxAge: SIWX_MAX_AGE_SECONDS * 1000 });
  if (!valid.isValid) throw new PaymentRequiredError(valid.invalidReason, `the sign-in proof is refused: ${valid.invalidMessage}; sign the new challenge`);
  if (!payload.expirationTime)
    throw new PaymentRequiredError('invalid_siwx_expiration_time', 'the sign-in proof has no expirationTime; sign the challenge as given');
  if (payload.chainId !== X402_NETWORK)
    throw new PaymentRequiredError(
      'invalid_siwx_unsupported_chain',
      `the sign-in proof is for ${payload.chainId}; this service signs in wallets of ${X402_NETWORK}`,
    );
  const verified = await verifySIWxSignature(payload, { evmVerifier: (args) => verifyWalletMessage(deps.facilitator, args) });
  if (!verified.isValid) throw new PaymentRequiredError(verified.invalidReason, `the sign-in proof is refused: ${verified.invalidMessage}`);
  const address = verified.payer.toLowerCase();
  await claimSiwxNonce(deps.db, payload, address, deps.clock.now());
  return address;
}

/** EOA first (offline); a smart account's signature is asked of the chain, where the facilitator can. */
async function verifyWalletMessage(facilitator: Facilitator, args: { address: `0x${string}`; message: string; signature: `0x${string}` }): Promise<boolean> {
  if (await verifyMessage(args).catch(() => false)) return true;
  return (await facilitator.verifyMessage?.(args.address, args.message, args.signature).catch(() => false)) ?? false;
}

/** Claims the proof's nonce (first use wins, on any node); refused when it was used before. */
async function claimSiwxNonce(db: DbOrTx, payload: SIWxPayload, address: string, now: Date): Promise<void> {
  // Past this the proof is refused anyway (too old, or expired), so the nonce need not be kept longer.
  const issuedPlusAge = new Date(payload.issuedAt).getTime() + SIWX_MAX_AGE_SECONDS * 1000;
  const expiresAt = new Date(Math.max(now.getTime(), Math.min(issuedPlusAge, new Date(payload.expirationTime ?? issuedPlusAge).getTime())));
  const claimed = await db.insert(siwxNonces).values({ nonce: payload.nonce, address, expiresAt }).onConflictDoNothing().returning({ nonce: siwxNonces.nonce });
  if (claimed.length === 0)
    throw new PaymentRequiredError('invalid_siwx_nonce', 'this sign-in proof was already used; sign the new challenge (each proof signs in once)');
}

/** Housekeeping: forgets the nonces of proofs that could no longer be accepted. */
export async function pruneSiwxNonces(db: DbOrTx, now: Date): Promise<number> {
  const gone = await db
    .delete(siwxNonces)
    .where(lt(siwxNonces.expiresAt, new Date(now.getTime() - 60_000)))
    .returning({ nonce: siwxNonces.nonce });
  return gone.length;
}
