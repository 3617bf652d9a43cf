import { createSiteUploadUrls, finalizeSiteUpload } from '../agent-api/actions/apps.js';

/*
 * Files too large (or too many) for one JSON body go by upload URL, as the Agent API's
 * create_site_upload_urls and finalize_site_upload do for a wallet's app: the same bodies and
 * answers (one schema each), free for the account. The account's finalize takes no entryPoint (an
 * account's site serves index.html).
 */
export const SiteUploadUrlsBodySchema = createSiteUploadUrls.input.meta({ id: 'SiteUploadUrlsRequest' });
export const SiteUploadUrlsResponseSchema = createSiteUploadUrls.output.meta({ id: 'SiteUploadUrlsResponse' });
export const FinalizeSiteUploadBodySchema = finalizeSiteUpload.input.omit({ entryPoint: true }).meta({ id: 'FinalizeSiteUploadRequest' });
