import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { packagePath } from '../../package-root.js';

const here = packagePath('service', 'payments', 'dev-chain');
export const DEV_USDC_SOURCE_PATH = path.join(here, 'DevUSDC.sol');
export const DEV_USDC_ARTIFACT_PATH = path.join(here, 'DevUSDC.json');

export interface DevUsdcArtifact {
  solcVersion: string;
  /** sha256 of the source the artifact was compiled from. */
  sourceSha256: string;
  /** Runtime bytecode (what anvil_setCode places at the USDC address). */
  deployedBytecode: `0x${string}`;
}

/**
 * Compiles DevUSDC.sol with npm solc (~1.5 s). The service loads the committed DevUSDC.json instead;
 * test/payments/dev-token.test.ts recompiles and checks the committed artifact matches.
 * `npx tsx service/payments/dev-chain/compile.ts` rewrites it.
 */
export function compileDevUsdc(): DevUsdcArtifact {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { compile(input: string): string; version(): string };
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
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  return {
    solcVersion: solc.version(),
    sourceSha256: createHash('sha256').update(source).digest('hex'),
    deployedBytecode: `0x${out.contracts['DevUSDC.sol']!.DevUSDC!.evm.deployedBytecode.object}`,
  };
}

export function loadDevUsdcArtifact(): DevUsdcArtifact {
  return JSON.parse(fs.readFileSync(DEV_USDC_ARTIFACT_PATH, 'utf8')) as DevUsdcArtifact;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.writeFileSync(DEV_USDC_ARTIFACT_PATH, `${JSON.stringify(compileDevUsdc(), null, 2)}\n`);
  process.stdout.write(`wrote ${DEV_USDC_ARTIFACT_PATH}\n`);
}
