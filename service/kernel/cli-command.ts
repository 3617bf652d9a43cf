import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from './package-root.js';

/**
 * How a person at a terminal runs this package's CLI, where it is: `svc-agent-host` when that command
 * is on the PATH and is this package, `npx svc-agent-host` when the package is installed in a project,
 * and `npm run svc --` in a clone (0.25 s a call where `npx svc-agent-host` costs 1.1–1.6 s loading
 * the clone's tree). Messages, the start banner and tool refusals name it, so what they say works as
 * typed. (PATH is read here, once, like the platform: it describes where the package sits, not how
 * the service is configured.)
 */
export function detectCliCommand(env: NodeJS.ProcessEnv = process.env, root: string = PACKAGE_ROOT): string {
  const installed = root.split(path.sep).includes('node_modules');
  if (!installed) return 'npm run svc --';
  const names = process.platform === 'win32' ? ['svc-agent-host.cmd', 'svc-agent-host'] : ['svc-agent-host'];
  const ownBin = realpath(path.join(root, 'bin', 'svc.mjs'));
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    for (const name of names) {
      const candidate = path.join(dir, name);
      if (!fs.existsSync(candidate)) continue;
      // A global install links the command to this very file; a local one lives in node_modules/.bin.
      if (process.platform === 'win32' || realpath(candidate) === ownBin) return 'svc-agent-host';
    }
  }
  return 'npx svc-agent-host';
}

function realpath(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return file;
  }
}

/** The CLI command for this process (read once). */
export const CLI_COMMAND = detectCliCommand();

/** `svc(args)`: the command line that runs `args` with this package's CLI, e.g. `npm run svc -- key create …`. */
export const svcCommand = (args: string): string => `${CLI_COMMAND} ${args}`;
