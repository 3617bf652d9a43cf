import type { InlineSiteFile, WriteSiteFilesBody } from '../../shared/account-api/sites.js';
import { isValidContentType } from '../../shared/content-types.js';
import { invalidField } from '../kernel/app-error.js';
import { decodeBase64Field } from '../http/base64-field.js';
import type { SiteFileBytes, SiteFilesChange } from './sites.js';
import { listedSitePath } from './site-paths.js';

/**
 * Files given inline in an Account API body (`files: [{path, content, encoding?, contentType?}]`),
 * as bytes. Refused before anything is stored, naming `files.N.…`: a media type that is not one,
 * base64 that is not well-formed.
 */
export function decodeInlineFile(f: InlineSiteFile, i: number): SiteFileBytes {
  if (f.contentType !== undefined && !isValidContentType(f.contentType)) throw invalidField(`files.${i}.contentType`, 'not a media type');
  const bytes = f.encoding === 'base64' ? decodeBase64Field(`files.${i}.content`, f.content) : Buffer.from(f.content, 'utf8');
  return { path: f.path, bytes, contentType: f.contentType };
}

/**
 * The change a `POST /api/v1/sites/:siteId/files` body asks of an existing site: its inline files
 * decoded and the paths to delete, each path checked and normalised, no path twice in either list or
 * across both (`css/a.css` and `/css/a.css` are one path).
 */
export function siteFilesChange(body: WriteSiteFilesBody): SiteFilesChange {
  const seen = new Set<string>();
  const write = (body.files ?? []).map((f, i) => ({ ...decodeInlineFile(f, i), path: listedSitePath(f.path, `files.${i}.path`, seen) }));
  const remove = (body.delete ?? []).map((p, i) => listedSitePath(p, `delete.${i}`, seen));
  if (!write.length && !remove.length) throw invalidField('files', 'give files to write, paths to delete, or both');
  return { write, remove };
}
