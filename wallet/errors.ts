import { atomicToUsdc } from '../shared/money.js';

/**
 * Every way the wallet refuses or fails, with a sentence an agent can act on: what failed, what it
 * cost (usually nothing), what to do next. `spent` says whether money may have left.
 */
export type WalletErrorCode =
  | 'no_wallet'
  | 'bad_key'
  | 'origin_not_allowed'
  | 'cap_exceeded'
  | 'approval_required'
  | 'approval_declined'
  | 'price_drift'
  | 'terms_refused'
  | 'payee_changed'
  | 'redirect_refused'
  | 'payment_rejected'
  | 'outcome_unknown'
  | 'ledger_busy'
  | 'ledger_invalid'
  | 'service_unreachable';

/** What to do when no wallet is configured (every `no_wallet` refusal ends with it). */
export const GET_A_WALLET =
  'Ask the user to give the MCP server a wallet: SVC_WALLET_KEY_FILE (svc-mcp --new-wallet <file> writes one) or SVC_WALLET_PRIVATE_KEY. ' +
  'Or, free and with no wallet: SVC_API_KEY set to a personal key (svc_pat_…) makes the account_* tools (and deploy_site, upload_dataset) act for that account.';

/** The refusal of a paid call when no wallet is configured. */
export function noWalletToPay(action: string, price: string): WalletError {
  return new WalletError('no_wallet', `${action} costs ${price} USDC but no wallet is configured; nothing was paid. ${GET_A_WALLET}`);
}

export class WalletError extends Error {
  override readonly name = 'WalletError';
  constructor(
    readonly code: WalletErrorCode,
    message: string,
    /** 'none': no signed payment left the process; 'maybe': it left and the outcome is unknown (counted as spent). */
    readonly spent: 'none' | 'maybe' = 'none',
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export function isWalletError(e: unknown): e is WalletError {
  return e instanceof WalletError;
}

/** Whether a payment of `amount` is above the person's approval line (SVC_APPROVAL_ABOVE; unset: never). */
export const aboveApprovalLine = (approvalAbove: bigint | undefined, amount: bigint): boolean => approvalAbove !== undefined && amount > approvalAbove;

/**
 * The person's approval line (SVC_APPROVAL_ABOVE): a payment above it is signed only when the person
 * approved at least its amount (`approved`, asked by svc-mcp: mcp/approval.ts). Checked by the wallet
 * itself before anything is signed, so a path that forgot to ask is refused, not paid.
 */
export function assertApproved(approvalAbove: bigint | undefined, action: string, amount: bigint, approved: bigint | undefined): void {
  if (!aboveApprovalLine(approvalAbove, amount) || (approved !== undefined && amount <= approved)) return;
  throw new WalletError(
    'approval_required',
    `Refused to pay ${atomicToUsdc(amount)} USDC for ${action}: payments above ${atomicToUsdc(approvalAbove!)} USDC need the person's approval (SVC_APPROVAL_ABOVE, their setting: no tool argument, token or retry changes it), and it was not given. Nothing was signed or paid.`,
    'none',
    { approvalAbove: atomicToUsdc(approvalAbove!), price: atomicToUsdc(amount) },
  );
}
