import { randomUUID } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { McpContext } from '../context.js';
import { ToolFailure, okResult } from '../results.js';
import { SITE_UPLOAD_MAX_FILES } from '../../shared/agent-api/actions/common.js';
import { answerInToolWords } from '../vocabulary.js';
import { callAccountTool, postToAccountApi } from './account-tools.js';
import type { DeployFile, DeployInput } from './deploy-files.js';
import { inlineContent, jsonSize, REQUEST_BUDGET } from './inline-content.js';
import { type Extra, Progress } from './paid-steps.js';
import { putBytes, putInTurns } from './upload-put.js';
import { continueAsTask } from '../tasks/extension.js';

/** A file as the Account API takes it inline, and the bytes of JSON it takes there. */
function inlineFile(f: DeployFile): { file: InlineFile; size: number } {
  const file = { path: f.path, ...inlineContent(f.bytes), contentType: f.type };
  return { file, size: jsonSize(file) };
}

type InlineFile = { path: string; content: string; encoding?: 'base64'; contentType: string };

/** The files in requests of at most REQUEST_BUDGET bytes of JSON each, in order; `first` is the room the first request's other fields take. */
function requests(files: { file: InlineFile; size: number }[], first: number): InlineFile[][] {
  const out: InlineFile[][] = [[]];
  let used = first;
  for (const { file, size } of files) {
    if (used + size + 1 > REQUEST_BUDGET && out[out.length - 1]!.length > 0) {
      out.push([]);
      used = 0;
    }
    out[out.length - 1]!.push(file);
    used += size + 1;
  }
  return out;
}

/**
 * deploy_site for the account (svc-mcp with SVC_API_KEY and no wallet): the same files, published
 * through the Account API, free. A new app is `account_publish_app` (index.html and the other files
 * that fit in one request), then `account_write_app_files` for the rest; an existing app
 * (`appId`) is `account_write_app_files` alone (its other files stay). A file larger than one
 * request goes by upload URL (`/sites/:id/upload-urls`, a PUT, `…/finalize`), as the wallet's do.
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
  const inline = files.map((f) => ({ source: f, ...inlineFile(f) }));
  const html = inline.find((f) => f.source === entry)!;
  // A new app's index.html is the publish request's `html`: it goes inline, or not at all.
  if (newApp && html.size > REQUEST_BUDGET)
    throw new ToolFailure(
      `deploy_site: ${entry.path} does not fit in one Account API request (${REQUEST_BUDGET.toLocaleString('en')} bytes of JSON), and a new app is published from it. Nothing was sent.`,
    );
  const large = inline.filter((f) => f !== html && f.size > REQUEST_BUDGET).map((f) => f.source);
  const small = inline.filter((f) => f.size <= REQUEST_BUDGET && !(newApp && f === html));
  const batches = newApp ? requests(small, html.size + 200) : requests(small, 0);
  const byUrl = chunks(large, SITE_UPLOAD_MAX_FILES);
  const progress = new Progress(extra, batches.length + byUrl.length * 2 + large.length + (args.visibility || args.password ? 1 : 0));
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
  // Checked: the rest may run as a task (mcp/tasks/extension.ts).
  await continueAsTask(`deploying ${files.length} file${files.length === 1 ? '' : 's'} for the account`);
  try {
    for (const [i, batch] of batches.entries()) {
      if (!batch.length && !(newApp && i === 0)) continue; // an update made only of large files
      const answer =
        newApp && i === 0
          ? await callAccountTool(ctx, 'account_publish_app', {
              requestId: `deploy-${randomUUID()}`,
              html: html.file.content,
              ...(batch.length ? { files: batch } : {}),
              ...(args.appName ? { appName: args.appName } : {}),
            })
          : await callAccountTool(ctx, 'account_write_app_files', { appId: (app.appId as string | undefined) ?? args.appId, files: batch });
      app = answer.app as Record<string, unknown>;
      await progress.report(`sent ${batch.length + (newApp && i === 0 ? 1 : 0)} files`);
    }
    for (const chunk of byUrl) app = await uploadByUrl(ctx, (app.appId as string | undefined) ?? args.appId!, chunk, progress);
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
    `Deployed ${files.length} file${files.length === 1 ? '' : 's'} for the account, free; live at ${app.pathUrl} (also ${app.url}).`,
  );
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Files no request carries: upload URLs, a PUT each, then finalize; answers the app as it now is (in the tools' words). */
async function uploadByUrl(ctx: McpContext, appId: string, files: DeployFile[], progress: Progress): Promise<Record<string, unknown>> {
  const site = `/sites/${encodeURIComponent(appId)}/upload-urls`;
  const urls = (await postToAccountApi(ctx, site, { files: files.map((f) => ({ path: f.path, size: f.bytes.length, type: f.type })) })) as {
    uploadToken: string;
    files: { path: string; uploadUrl: string; headers: Record<string, string> }[];
  };
  await progress.report(`got ${files.length} upload URLs`);
  await putInTurns(files, async (f) => {
    const target = urls.files.find((t) => t.path === f.path);
    if (!target) throw new ToolFailure(`the service returned no upload URL for ${f.path}.`);
    const res = await putBytes(
      ctx,
      target.uploadUrl,
      { headers: target.headers, body: new Uint8Array(f.bytes) },
      (reason) => `uploading ${f.path} failed ${reason}.`,
    );
    await res.arrayBuffer().catch(() => undefined);
    await progress.report(`uploaded ${f.path}`);
  });
  const done = await postToAccountApi(ctx, `${site}/finalize`, {
    uploadToken: urls.uploadToken,
    files: files.map((f) => ({ path: f.path, size: f.bytes.length })),
  });
  await progress.report(`added ${files.length} files`);
  return answerInToolWords(done).app as Record<string, unknown>;
}
