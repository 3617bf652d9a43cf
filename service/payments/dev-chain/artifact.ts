import fs from 'node:fs';
import path from 'node:path';
import { packagePath } from '../../kernel/package-root.js';

const here = packagePath('service', 'payments', 'dev-chain');
export const DEV_USDC_SOURCE_PATH = path.join(here, 'DevUSDC.sol');
export const DEV_USDC_ARTIFACT_PATH = path.join(here, 'DevUSDC.json');

/**
 * DevUSDC.sol compiled (solc 0.8.37, optimizer 200, evm paris), committed as DevUSDC.json: the
 * service loads it and never compiles. test/payments/facilitators.test.ts recompiles the source and
 * checks the committed artifact matches; `npx tsx test/helpers/compile-dev-usdc.ts` rewrites it.
 */
export interface DevUsdcArtifact {
  solcVersion: string;
  /** sha256 of the source the artifact was compiled from. */
  sourceSha256: string;
  /** Runtime bytecode (what anvil_setCode places at the USDC address). */
  deployedBytecode: `0x${string}`;
}

export function loadDevUsdcArtifact(): DevUsdcArtifact {
  return JSON.parse(fs.readFileSync(DEV_USDC_ARTIFACT_PATH, 'utf8')) as DevUsdcArtifact;
}
