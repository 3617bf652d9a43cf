import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEV_USDC_ARTIFACT_PATH, DEV_USDC_SOURCE_PATH, type DevUsdcArtifact } from '../../service/payments/dev-chain/artifact.js';

/** Compiles DevUSDC.sol with npm solc (a devDependency, ~1.5 s), as DevUSDC.json was compiled. */
export function compileDevUsdc(): DevUsdcArtifact {
  const solc = createRequire(import.meta.url)('solc') as { compile(input: string): string; version(): string };
  const source = fs.readFileSync(DEV_USDC_SOURCE_PATH, 'utf8');
  const input = {
    language: 'Solidity',
    sources: { 'DevUSDC.sol': { content: source } },
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(`DevUSDC.sol does not compile:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  return {
    solcVersion: solc.version(),
    sourceSha256: createHash('sha256').update(source).digest('hex'),
    deployedBytecode: `0x${out.contracts['DevUSDC.sol']!.DevUSDC!.evm.deployedBytecode.object}`,
  };
}

// `npx tsx test/helpers/compile-dev-usdc.ts` rewrites the committed artifact after a change to DevUSDC.sol.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.writeFileSync(DEV_USDC_ARTIFACT_PATH, `${JSON.stringify(compileDevUsdc(), null, 2)}\n`);
  process.stdout.write(`wrote ${DEV_USDC_ARTIFACT_PATH}\n`);
}
