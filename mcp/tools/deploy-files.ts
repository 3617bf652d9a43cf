import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { contentMatchesType, contentTypeForPath, mediaTypeOf } from '../../shared/content-types.js';
import { VisibilitySchema } from '../../shared/agent-api/actions/common.js';
import type { McpContext } from '../context.js';
import { ToolFailure } from '../results.js';
import { APP_ID_DESCRIPTION } from '../vocabulary.js';

/**
 * What deploy_site publishes, read and checked before anything is sent or paid: its arguments, the
 * files (inline or a local folder) and the entry point. Both ways of deploying start here: paying
 * from a wallet (deploy-site.ts) and for the account (deploy-for-account.ts).
 */

// Media types guessed from the extension, as the service guesses them for uploaded files.
const typeOf = contentTypeForPath;
const MAX_FILES = 1000;
/** Upper bound of one deploy's bytes held in memory (files are read before the first payment). */
const MAX_TOTAL_BYTES = 256 * 1024 * 1024;

export interface DeployFile {
  path: string;
  bytes: Buffer;
  type: string;
}

const FileArg = z.object({
  path: z.string().min(1).max(512).describe('Relative path, e.g. "index.html" or "css/site.css"'),
  content: z.string().optional().describe('UTF-8 text content'),
  contentBase64: z.string().optional().describe('Binary content, base64 (instead of content)'),
  contentType: z.string().optional().describe('Media type; guessed from the extension when omitted'),
});

function cleanPath(p: string): string {
  const n = p.replace(/\\/g, '/').replace(/^\.\/+/, '');
  if (!n || n.startsWith('/') || n.split('/').some((s) => s === '..' || s === ''))
    throw new ToolFailure(`deploy_site: "${p}" is not a relative file path (no leading "/", no ".."). Nothing was done.`);
  return n;
}

function readFolder(root: string, maxBytes: number): DeployFile[] {
  const abs = path.resolve(root);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(abs);
  } catch {
    throw new ToolFailure(`deploy_site: the folder ${abs} does not exist on the machine running the MCP server. Nothing was done.`);
  }
  if (!stat.isDirectory()) throw new ToolFailure(`deploy_site: ${abs} is not a folder. Nothing was done.`);
  const out: DeployFile[] = [];
  const walk = (dir: string) => {
    for (const ent of fs.readdirSync(dir, { withFileTypes: true })) {
      // Dotfiles (.git, .env) and node_modules are never published from a folder.
      if (ent.name.startsWith('.') || ent.name === 'node_modules') continue;
      const full = path.join(dir, ent.name);
      if (ent.isDirectory()) walk(full);
      else if (ent.isFile()) {
        const rel = path.relative(abs, full).split(path.sep).join('/');
        const size = fs.statSync(full).size;
        if (size > maxBytes)
          throw new ToolFailure(`deploy_site: ${rel} is ${size} bytes, over the ${maxBytes}-byte limit (SVC_MCP_MAX_FILE_BYTES). Nothing was done.`);
        if (out.length >= MAX_FILES)
          throw new ToolFailure(`deploy_site: the folder has more than ${MAX_FILES} files. Nothing was done; deploy a smaller folder.`);
        out.push({ path: rel, bytes: fs.readFileSync(full), type: typeOf(rel) });
      }
    }
  };
  walk(abs);
  return out;
}

export const DeployArgs = {
  appName: z.string().min(1).max(63).optional().describe('Name (slug) of a new app; omitted: a free one is picked. Omit with appId.'),
  appId: z.string().min(1).optional().describe(`${APP_ID_DESCRIPTION} of an existing app to update instead`),
  files: z.array(FileArg).max(MAX_FILES).optional().describe('Inline files'),
  folder: z.string().optional().describe('Absolute path of a local folder (dotfiles and node_modules skipped)'),
  entryPoint: z.string().optional().describe('File served for "/" (default index.html)'),
  visibility: VisibilitySchema.optional().describe('New app: public (default) or private'),
  password: z.string().min(1).max(200).optional().describe('New app: private behind this password'),
};
export type DeployInput = { [K in keyof typeof DeployArgs]?: z.infer<(typeof DeployArgs)[K]> };

/** deploy_site's arguments when it publishes for the account: its apps are served from index.html. */
const { entryPoint: _entryPoint, ...accountDeployArgs } = DeployArgs;
export const AccountDeployArgs = accountDeployArgs;

/** The files a deploy publishes and its entry point, checked (the folder is read, nothing is sent). */
export function deployFiles(ctx: McpContext, args: DeployInput): { files: DeployFile[]; entry: DeployFile; entryPoint: string } {
  if (args.appName && args.appId) throw new ToolFailure('deploy_site takes appName (a new app) or appId (an existing app), not both. Nothing was done.');
  if (!args.files === !args.folder) throw new ToolFailure('deploy_site needs either files (inline) or folder (local path). Nothing was done.');
  const files: DeployFile[] = args.folder
    ? readFolder(args.folder, ctx.config.maxFileBytes)
    : args.files!.map((f) => {
        if ((f.content === undefined) === (f.contentBase64 === undefined))
          throw new ToolFailure(`deploy_site: ${f.path} needs content or contentBase64. Nothing was done.`);
        const p = cleanPath(f.path);
        return {
          path: p,
          bytes: f.content !== undefined ? Buffer.from(f.content, 'utf8') : Buffer.from(f.contentBase64!, 'base64'),
          type: f.contentType ?? typeOf(p),
        };
      });
  if (files.length === 0) throw new ToolFailure('deploy_site: no files to deploy. Nothing was done.');
  const totalBytes = files.reduce((n, f) => n + f.bytes.length, 0);
  if (totalBytes > MAX_TOTAL_BYTES)
    throw new ToolFailure(
      `deploy_site: ${totalBytes} bytes in total, over the ${MAX_TOTAL_BYTES}-byte limit of one deploy. Nothing was done; deploy in parts (appId) or use create_site_upload_urls (toolset advanced).`,
    );
  if (new Set(files.map((f) => f.path)).size !== files.length) throw new ToolFailure('deploy_site: two files have the same path. Nothing was done.');
  // The service refuses such a file when it arrives, after the app was paid for: said before anything is.
  const mislabelled = files.filter((f) => !contentMatchesType(f.type, f.bytes)).map((f) => `${f.path} is not ${mediaTypeOf(f.type)}`);
  if (mislabelled.length)
    throw new ToolFailure(
      `deploy_site: ${mislabelled.join('; ')} (its bytes do not match its extension${args.folder ? '' : ' or contentType'}). Nothing was done; fix the file or its name.`,
    );
  const entryPoint = cleanPath(args.entryPoint ?? 'index.html');
  const entry = files.find((f) => f.path === entryPoint);
  if (!entry) throw new ToolFailure(`deploy_site: the entry point ${entryPoint} is not among the files. Add it or set entryPoint. Nothing was done.`);
  return { files, entry, entryPoint };
}
