#!/usr/bin/env node
// Writes a new SQL migration for what changed in service/db/schema/*.ts (drizzle-kit, offline):
//   npm run db:generate -- <name>
// Migrations that have shipped are never rewritten: databases that applied them would break.
import { spawnSync } from 'node:child_process';

const name = process.argv[2] ?? 'change';
const r = spawnSync('npx', ['drizzle-kit', 'generate', '--name', name], { stdio: 'inherit' });
process.exit(r.status ?? 1);
