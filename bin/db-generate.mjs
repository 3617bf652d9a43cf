#!/usr/bin/env node
// Regenerates the SQL migrations from service/db/schema/*.ts (drizzle-kit, offline).
// Until the first release, the schema is one `init` migration, regenerated from scratch; after a
// release, pass --incremental to append a migration instead (never rewrite a shipped one).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

const incremental = process.argv.includes('--incremental');
if (!incremental) fs.rmSync('drizzle', { recursive: true, force: true });
const r = spawnSync('npx', ['drizzle-kit', 'generate', '--name', incremental ? 'change' : 'init'], { stdio: 'inherit' });
process.exit(r.status ?? 1);
