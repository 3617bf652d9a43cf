import { readFileSync } from 'node:fs';
import { packagePath } from './package-root.js';

/** The package version, read once from package.json. */
export const SERVICE_VERSION: string = (JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string }).version;
