// What `svc-mcp --new-wallet` needs of viem/accounts, named: a dynamic import of the package itself
// keeps all its exports (the mnemonic word lists too) in a chunk every start of svc-mcp reads.
export { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
