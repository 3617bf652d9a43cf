import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpContext } from '../context.js';
import { ToolFailure, okResult } from '../results.js';
import { callAccountTool } from './account-tools.js';
import type { DeployFile, DeployInput } from './deploy-files.js';
import { inlineContent, jsonSize, REQUEST_BUDGET } from './inline-content.js';
import { type Extra, Progress } from './paid-steps.js';

/** A file as the Account API takes it inline. */
function inlineFile(f: DeployFile): { path: string; content: string; encoding?: 'base64'; contentType: string } {
  return { path: f.path, ...inlineContent(f.bytes), contentType: f.type };
}

type InlineFile = ReturnType<typeof inlineFile>;

/** The files in requests of at most REQUEST_BUDGET bytes of JSON each, in order; `first` is the room the first request's other fields take. */
function requests(files: InlineFile[], first: number): InlineFile[][] {
  const out: InlineFile[][] = [[]];
  let used = first;
  for (const f of files) {
    const size = jsonSize(f) + 1;
    if (used + size > REQUEST_BUDGET && out[out.length - 1]!.length > 0) {
      out.push([]);
      used = 0;
    }
    out[out.length - 1]!.push(f);
    used += size;
  }
  return out;
}

/**
 * deploy_site for the account (svc-mcp with SVC_API_KEY and no wallet): the same files, published
 * through the Account API, free. A new app is `account_publish_app` (index.html and the other files
 * that fit in one request), then `account_write_app_files` for the rest; an existing app
 * (`appId`) is `account_write_app_files` alone (its other files stay). Every file is checked to fit
 * in one request before anything is sent.
 */
export async function deployForAccount(
  ctx: McpContext,
  args: DeployInput,
  deploy: { files: DeployFile[]; entry: DeployFile },
  extra: Extra,
): Promise<CallToolResult> {
  // The entry point is index.html here: the tool takes no entryPoint in this mode (AccountDeployArgs).
  const { files, entry } = deploy;
  const newApp = !args.appId;
  if (!newApp && (args.visibility || args.password))
    throw new ToolFailure('deploy_site: visibility and password apply to a new app; account_update_app changes them on an existing one. Nothing was sent.');
  const inline = files.map(inlineFile);
  const tooBig = inline.find((f) => jsonSize(f) > REQUEST_BUDGET);
  if (tooBig)
    throw new ToolFailure(
      `deploy_site: ${tooBig.path} does not fit in one Account API request (${REQUEST_BUDGET.toLocaleString('en')} bytes of JSON, base64 for binary files). Nothing was sent; leave it out, or deploy with a wallet (SVC_WALLET_KEY_FILE), whose uploads take files of any size up to the service's limit.`,
    );
  const html = inline.find((f) => f.path === entry.path)!;
  const others = inline.filter((f) => f !== html);
  const batches = newApp ? requests(others, jsonSize(html.content) + 200) : requests(inline, 0);
  const progress = new Progress(extra, batches.length + (args.visibility || args.password ? 1 : 0));
  let app: Record<string, unknown> = {};
  /** A step's failure in deploy_site's words, with what exists after it. */
  const stopped = (e: unknown): unknown => {
    if (!(e instanceof ToolFailure)) return e;
    const after = app.appId
      ? ` App ${app.appName} exists with the files sent before; retry with appId ${app.appName} to finish.`
      : newApp
        ? ' Nothing was published.'
        : ' No file was changed.';
    return new ToolFailure(`deploy_site stopped: ${e.message}${after}`);
  };
  try {
    for (const [i, batch] of batches.entries()) {
      const answer =
        newApp && i === 0
          ? await callAccountTool(ctx, 'account_publish_app', {
              requestId: `deploy-${randomUUID()}`,
              html: html.content,
              ...(batch.length ? { files: batch } : {}),
              ...(args.appName ? { appName: args.appName } : {}),
            })
          : await callAccountTool(ctx, 'account_write_app_files', { appId: (app.appId as string | undefined) ?? args.appId, files: batch });
      app = answer.app as Record<string, unknown>;
      await progress.report(`sent ${batch.length + (newApp && i === 0 ? 1 : 0)} files`);
    }
    if (args.visibility || args.password) {
      const access = { ...(args.visibility ? { visibility: args.visibility } : {}), ...(args.password ? { password: args.password } : {}) };
      app = (await callAccountTool(ctx, 'account_update_app', { appId: app.appId, ...access })).app as Record<string, unknown>;
      await progress.report(app.hasPassword ? 'made private behind the password' : `made ${app.visibility}`);
    }
  } catch (e) {
    throw stopped(e);
  }
  const bytes = files.reduce((n, f) => n + f.bytes.length, 0);
  return okResult(
    { appId: app.appId, appName: app.appName, url: app.url, pathUrl: app.pathUrl, files: files.length, bytes, paid: '0' },
    `Deployed ${files.length} files for the account, free; live at ${app.url} (also ${app.pathUrl}).`,
  );
}
