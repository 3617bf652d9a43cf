import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface AnvilProcess {
  rpcUrl: string;
  pid: number;
  /** Resolves when anvil exits, whoever stopped it (stop(), a crash, a kill). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

/**
 * The platforms the registry has an anvil for (`@foundry-rs/anvil`'s platform packages, each an
 * optional dependency of svc: npm installs the one that fits), keyed by Node's platform and arch.
 */
export const ANVIL_PLATFORMS: Readonly<Record<string, string>> = {
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

/** The anvil package for a platform and arch and the binary's path inside it; undefined where the registry has none. */
export function anvilPackageFor(platform: string, arch: string): { pkg: string; bin: string } | undefined {
  const pkg = ANVIL_PLATFORMS[`${platform}-${arch}`];
  if (!pkg) return undefined;
  return { pkg, bin: platform === 'win32' ? 'bin/anvil.exe' : 'bin/anvil' };
}

/** What to do where no anvil package fits: svc's own words, in the banner and in a paid call's 503. */
export function noAnvilPackageMessage(platform: string, arch: string): string {
  return (
    `npm has no anvil for ${platform}-${arch} (only macOS arm64/x64, Linux x64/arm64 and Windows x64): ` +
    'install anvil from Foundry (https://getfoundry.sh) and set SVC_X402_ANVIL_PATH to it'
  );
}

/** The anvil binary from npm (the platform package `anvilPackageFor` names), or an explicit path. */
export function resolveAnvilBinary(explicit?: string, platform: string = process.platform, arch: string = process.arch): string {
  if (explicit) return explicit;
  const found = anvilPackageFor(platform, arch);
  if (!found) throw new Error(noAnvilPackageMessage(platform, arch));
  const require = createRequire(import.meta.url);
  let dir: string;
  try {
    dir = path.dirname(require.resolve(`${found.pkg}/package.json`));
  } catch {
    throw new Error(
      `the anvil package ${found.pkg} is not installed (an optional dependency of svc: \`npm install\` without --omit=optional installs it), or set SVC_X402_ANVIL_PATH to an anvil binary`,
    );
  }
  const bin = path.join(dir, found.bin);
  if (!fs.existsSync(bin)) throw new Error(`anvil binary missing at ${bin}`);
  return bin;
}

/** How often anvil writes its state to `statePath` while it runs: a crash loses at most this much (two of them when it cut a write in half). */
export const STATE_INTERVAL_SECONDS = 5;

/**
 * anvil writes its state file in place (truncated, then written: no rename), so an anvil killed in
 * the middle of a write leaves half a file, from which it then refuses to start, on every attempt:
 * the dev chain would never come back. While anvil runs, each complete write (one that parses) is
 * copied to `<state>.last-good` (a temporary file renamed over it); before anvil starts, a state
 * file that does not parse is replaced by that copy. A crash then loses at most two intervals.
 */
export function lastGoodStatePath(statePath: string): string {
  return `${statePath}.last-good`;
}

function parses(file: string): boolean {
  try {
    JSON.parse(fs.readFileSync(file, 'utf8'));
    return true;
  } catch {
    return false;
  }
}

/** Before anvil starts: a state file left half-written is replaced by its last complete copy. */
function restoreLastGoodState(statePath: string): void {
  const good = lastGoodStatePath(statePath);
  if (fs.existsSync(statePath) && !parses(statePath) && fs.existsSync(good)) fs.copyFileSync(good, statePath);
}

/** While anvil runs: each new complete write of its state copied aside; the returned function stops. */
function keepLastGoodState(statePath: string): () => void {
  let copied = 0;
  const timer = setInterval(
    () => {
      let mtime: number;
      try {
        mtime = fs.statSync(statePath).mtimeMs;
      } catch {
        return; // not written yet
      }
      // A file caught in the middle of a write does not parse: the next round copies it.
      if (mtime === copied || !parses(statePath)) return;
      const tmp = `${lastGoodStatePath(statePath)}.tmp`;
      fs.copyFileSync(statePath, tmp);
      if (!parses(tmp)) return; // rewritten while being copied
      fs.renameSync(tmp, lastGoodStatePath(statePath));
      copied = mtime;
    },
    (STATE_INTERVAL_SECONDS * 1000) / 2,
  );
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * An anvil left running on this state file by a service that was killed (SIGKILL skips every exit
 * hook) holds the chain's port and would overwrite the state: stop it first (SIGTERM, so it saves its
 * state; SIGKILL after 3 s). It is recognised by the pid file beside the state and by its command line
 * naming the same state file, so a reused pid is never signalled; without /proc nothing is stopped.
 */
async function stopOrphan(pidFile: string, statePath: string): Promise<void> {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(pidFile, 'utf8').trim());
  } catch {
    return;
  }
  let cmdline = '';
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    fs.rmSync(pidFile, { force: true }); // not running any more
    return;
  }
  if (!cmdline.includes('anvil') || !cmdline.includes(statePath)) {
    fs.rmSync(pidFile, { force: true });
    return;
  }
  const alive = () => {
    try {
      process.kill(pid, 0);
      return fs.existsSync(`/proc/${pid}`) && !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
    } catch {
      return false;
    }
  };
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; alive() && waited < 3000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  if (alive()) process.kill(pid, 'SIGKILL');
  fs.rmSync(pidFile, { force: true });
}

/**
 * Starts anvil on a loopback port (`port`, default any free one) with chain id 8453 (the id x402
 * clients sign for "base"), and resolves once it listens. With `statePath` the chain starts from the
 * state saved there and saves it every STATE_INTERVAL_SECONDS and on a clean stop (SIGTERM). Never
 * binds anything but 127.0.0.1.
 */
export async function startAnvil(options: { binary?: string; timeoutMs?: number; port?: number; statePath?: string } = {}): Promise<AnvilProcess> {
  const bin = resolveAnvilBinary(options.binary);
  const args = ['--host', '127.0.0.1', '--port', String(options.port ?? 0), '--chain-id', '8453', '--accounts', '2'];
  const pidFile = options.statePath ? path.join(path.dirname(options.statePath), 'anvil.pid') : undefined;
  if (options.statePath && pidFile) {
    fs.mkdirSync(path.dirname(options.statePath), { recursive: true });
    args.push('--state', options.statePath, '--state-interval', String(STATE_INTERVAL_SECONDS));
    await stopOrphan(pidFile, options.statePath);
    restoreLastGoodState(options.statePath);
  }
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  if (pidFile && child.pid) {
    fs.writeFileSync(pidFile, String(child.pid));
    child.once('exit', () => fs.rmSync(pidFile, { force: true }));
  }
  const rpcUrl = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`anvil did not start within ${options.timeoutMs ?? 10_000} ms: ${out.slice(-300)}`));
    }, options.timeoutMs ?? 10_000);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Listening on (127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        child.stdout?.resume();
        resolve(`http://${m[1]}`);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`anvil could not be started (${bin}): ${e.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`anvil exited during start (code ${code}, signal ${signal}): ${out.slice(-300)}`));
    });
  });
  child.stdout?.on('data', () => {});
  child.stderr?.on('data', () => {});
  if (options.statePath) child.once('exit', keepLastGoodState(options.statePath));
  // Never leave an anvil behind when this process exits without closing the runtime.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      resolve({ code, signal });
    }),
  );
  return {
    rpcUrl,
    pid: child.pid!,
    exited,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 2000).unref();
      }),
  };
}
