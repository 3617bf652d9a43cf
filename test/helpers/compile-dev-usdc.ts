import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { packagePath } from '../../service/kernel/package-root.js';
import { DEV_USDC_ARTIFACT_PATH, DEV_USDC_SOURCE_PATH, type DevUsdcArtifact } from '../../service/payments/dev-chain/artifact.js';

const require = createRequire(import.meta.url);

/** The compiler's input for DevUSDC.sol: the source and the settings DevUSDC.json was compiled with. */
function compilerInput(source: string): string {
  return JSON.stringify({
    language: 'Solidity',
    sources: { 'DevUSDC.sol': { content: source } },
    settings: { optimizer: { enabled: true, runs: 200 }, evmVersion: 'paris', outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } } },
  });
}

/**
 * What DevUSDC.sol compiles to, compiled once per source, settings and solc version and kept in
 * node_modules/.cache (solc's output is a function of those three): the check of the committed
 * artifact costs ~1.5 s of solc only after one of them changed.
 */
export function compiledDevUsdc(): DevUsdcArtifact {
  const { version } = require('solc/package.json') as { version: string };
  const source = fs.readFileSync(DEV_USDC_SOURCE_PATH, 'utf8');
  const key = createHash('sha256').update(`solc ${version}\n`).update(compilerInput(source)).digest('hex').slice(0, 16);
  const file = packagePath(`node_modules/.cache/svc-tests/dev-usdc-${key}.json`);
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as DevUsdcArtifact;
  } catch {
    const artifact = compileDevUsdc(source);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(`${file}.${process.pid}`, JSON.stringify(artifact));
    fs.renameSync(`${file}.${process.pid}`, file);
    return artifact;
  }
}

/** Compiles DevUSDC.sol with npm solc (a devDependency, ~1.5 s), as DevUSDC.json was compiled. */
export function compileDevUsdc(source = fs.readFileSync(DEV_USDC_SOURCE_PATH, 'utf8')): DevUsdcArtifact {
  const solc = require('solc') as { compile(input: string): string; version(): string };
  const out = JSON.parse(solc.compile(compilerInput(source))) as {
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
