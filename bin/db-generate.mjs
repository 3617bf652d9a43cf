#!/usr/bin/env node
// Regenerates the SQL migrations from service/db/schema/*.ts (drizzle-kit, offline).
import { spawnSync } from 'node:child_process';

const name = process.argv[2] ?? 'schema';
const r = spawnSync('npx', ['drizzle-kit', 'generate', '--name', name], { stdio: 'inherit' });
process.exit(r.status ?? 1);
