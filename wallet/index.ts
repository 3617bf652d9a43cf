export { loadWalletConfig, WalletEnvSchema, defaultLedgerPath, type WalletConfig, type Caps } from './config.js';
export { WalletError, isWalletError, type WalletErrorCode } from './errors.js';
export { SpendLedger, headroom, type LedgerEntry, type SpendTotals } from './ledger.js';
export { termsFromDiscovery, fetchDiscovery, USDC_BY_CHAIN, type PaymentTerms } from './terms.js';
export { Wallet, createWallet, type PaidRequest, type PaidResponse, type WalletStatus } from './wallet.js';
export { callPaidTool, paymentRequiredOf, type McpToolCaller, type McpToolResult, type PaidToolCall } from './mcp-payer.js';
