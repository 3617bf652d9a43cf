// The drizzle schema, one file per resource. drizzle.config.ts reads every file in this folder, so a
// new resource only adds its file here and re-exports it below.
export * from './accounts.js';
export * from './sites.js';
export * from './oauth.js';
export * from './tables.js';
export * from './functions.js';
export * from './datasets.js';
export * from './payments.js';
export * from './abuse.js';
export * from './operator.js';
export * from './site-versions.js';
export * from './counters.js';
export * from './cdn.js';
export * from './mcp-tasks.js';
