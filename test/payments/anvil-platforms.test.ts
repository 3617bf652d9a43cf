import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ANVIL_PLATFORMS, anvilPackageFor, noAnvilPackageMessage, resolveAnvilBinary } from '../../service/payments/dev-chain/anvil.js';
import { packagePath } from '../../service/kernel/package-root.js';

// The embedded dev chain's anvil comes from the registry's platform packages: npm installs the one
// whose os/cpu fit the machine (each is an optional dependency), and svc picks it by process.platform
// and process.arch.
describe('the anvil package for each platform', () => {
  it.each([
    ['darwin', 'arm64', '@foundry-rs/anvil-darwin-arm64', 'bin/anvil'],
    ['darwin', 'x64', '@foundry-rs/anvil-darwin-amd64', 'bin/anvil'],
    ['linux', 'x64', '@foundry-rs/anvil-linux-amd64', 'bin/anvil'],
    ['linux', 'arm64', '@foundry-rs/anvil-linux-arm64', 'bin/anvil'],
    ['win32', 'x64', '@foundry-rs/anvil-win32-amd64', 'bin/anvil.exe'],
  ])('%s %s: %s, %s', (platform, arch, pkg, bin) => {
    expect(anvilPackageFor(platform, arch)).toEqual({ pkg, bin });
  });

  it.each([
    ['win32', 'arm64'],
    ['linux', 'ia32'],
    ['freebsd', 'x64'],
    ['linux', 'ppc64'],
  ])('%s %s has none: the refusal says what to install and which setting to set', (platform, arch) => {
    expect(anvilPackageFor(platform, arch)).toBeUndefined();
    expect(() => resolveAnvilBinary(undefined, platform, arch)).toThrow(noAnvilPackageMessage(platform, arch));
    expect(noAnvilPackageMessage(platform, arch)).toMatch(new RegExp(`^npm has no anvil for ${platform}-${arch} .*https://getfoundry.sh.*SVC_X402_ANVIL_PATH`));
    // An explicit binary is used wherever svc runs.
    expect(resolveAnvilBinary('/opt/foundry/anvil', platform, arch)).toBe('/opt/foundry/anvil');
  });

  it('package.json names every one as an optional dependency, and the lockfile gives npm the os and cpu each fits', () => {
    const pkg = JSON.parse(fs.readFileSync(packagePath('package.json'), 'utf8')) as { optionalDependencies: Record<string, string> };
    const lock = JSON.parse(fs.readFileSync(packagePath('package-lock.json'), 'utf8')) as {
      packages: Record<string, { version: string; optional?: boolean; os?: string[]; cpu?: string[] }>;
    };
    for (const [platformArch, name] of Object.entries(ANVIL_PLATFORMS)) {
      const [platform, arch] = platformArch.split('-');
      expect(pkg.optionalDependencies[name], name).toBe('1.7.1');
      expect(lock.packages[`node_modules/${name}`], name).toMatchObject({ version: '1.7.1', optional: true, os: [platform], cpu: [arch] });
    }
    expect(
      Object.keys(pkg.optionalDependencies)
        .filter((n) => n.startsWith('@foundry-rs/'))
        .sort(),
    ).toEqual(Object.values(ANVIL_PLATFORMS).sort());
  });

  it("this machine's is installed and found; another platform's package is not installed, and the refusal says how to get it", () => {
    const here = anvilPackageFor(process.platform, process.arch);
    if (here) expect(resolveAnvilBinary()).toBe(packagePath(`node_modules/${here.pkg}/${here.bin}`));
    const other = process.platform === 'win32' ? (['linux', 'x64'] as const) : (['win32', 'x64'] as const);
    expect(() => resolveAnvilBinary(undefined, ...other)).toThrow(
      /^the anvil package @foundry-rs\/anvil-\S+ is not installed \(an optional dependency of svc: `npm install` without --omit=optional installs it\), or set SVC_X402_ANVIL_PATH/,
    );
  });
});
