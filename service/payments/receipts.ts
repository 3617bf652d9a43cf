import { createHash } from 'node:crypto';
import { X402_CURRENCY, X402_NETWORK } from '../../shared/agent-api/network.js';
import { canonicalReceiptText, type Receipt } from '../../shared/agent-api/receipt.js';
import { newId } from '../kernel/ids.js';

export interface ReceiptInput {
  action: string;
  wallet: string;
  txHash: string;
  recipient: string;
  price: string;
  app: { id: string; slug: string; visibility: 'public' | 'private' } | null;
  /** `settling`: stored with the work before the money moved; never returned (payment-store markSettled finalises it). */
  status: 'settled' | 'verified' | 'settling';
  createdAt: Date;
}

export function receiptHashOf(r: Omit<Receipt, 'receiptHash'>): string {
  return createHash('sha256').update(canonicalReceiptText(r), 'utf8').digest('hex');
}

export function buildReceipt(i: ReceiptInput): Receipt {
  const base: Omit<Receipt, 'receiptHash'> = {
    receiptId: newId('rcpt'),
    action: i.action,
    wallet: i.wallet,
    network: X402_NETWORK,
    txHash: i.txHash,
    recipient: i.recipient,
    price: i.price,
    currency: X402_CURRENCY,
    appId: i.app?.id ?? '',
    appName: i.app?.slug ?? '',
    visibility: i.app?.visibility ?? 'private',
    status: i.status,
    createdAt: i.createdAt.toISOString(),
  };
  return { ...base, receiptHash: receiptHashOf(base) };
}
