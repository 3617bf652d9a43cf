#!/usr/bin/env node
// The MCP server: runs the TypeScript sources through tsx, like bin/svc.mjs (no build step).
import { register } from 'tsx/esm/api';

register();
await import('../mcp/main.ts');
