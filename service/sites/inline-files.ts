import type { InlineSiteFile } from '../../shared/account-api/sites.js';
import { isValidContentType } from '../../shared/content-types.js';
import { invalidField } from '../http/app-error.js';
import { decodeBase64Field } from '../http/base64-field.js';
import type { SiteFileBytes } from './sites.js';
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
 * Inline files to write into an existing site (`POST /api/v1/sites/:siteId/files`): decoded, each
 * path checked and normalised, no path twice (`css/a.css` and `/css/a.css` are one path).
 */
export function inlineFilesToWrite(files: readonly InlineSiteFile[]): SiteFileBytes[] {
  const seen = new Set<string>();
  return files.map((f, i) => {
    const path = listedSitePath(f.path, i, seen);
    return { ...decodeInlineFile(f, i), path };
  });
}
