import { z } from 'zod';
import type { AgentAction } from '../action.js';
import { X402_CURRENCY, X402_NETWORK } from '../network.js';
import { SiteAccessBodySchema, SiteSuspensionSchema } from '../../account-api/sites.js';
import { AgentAppResponseSchema, NoBody, NoParams, SITE_UPLOAD_MAX_FILES, SiteParams, VisibilitySchema } from './common.js';

const relativePath = z.string().min(1).max(512).describe('Relative file path inside the app, e.g. "css/site.css" (no leading "/", no "..")');

// ── discovery ────────────────────────────────────────────────────────────────────────────────────

export const DiscoveryEndpointSchema = z
  .object({
    action: z.string(),
    method: z.enum(['GET', 'POST', 'PATCH', 'DELETE']),
    path: z.string(),
    description: z.string(),
    input: z.string().describe('Human-readable summary of the request (path parameters and body fields)'),
    inputSchema: z.record(z.string(), z.unknown()).describe('JSON Schema of the request body'),
    output: z.string().describe('Human-readable summary of the success response'),
    price: z.string().describe('Decimal USDC; "0" for free actions'),
    priceUpdatedAt: z.number().int().describe('Epoch milliseconds'),
  })
  .meta({ id: 'AgentEndpoint' });

/** `GET /api/x402`: exactly the spec's fields. */
export const DiscoveryDocumentSchema = z
  .object({
    ok: z.boolean(),
    service: z.string(),
    purpose: z.string(),
    network: z.literal(X402_NETWORK),
    recipient: z.string().describe('Receiving wallet address'),
    receiptSigner: z
      .string()
      .optional()
      .describe('Address that signs the offer-receipt receipts of settled payments (verifyReceiptSignatureEIP712 recovers it)'),
    currency: z.literal(X402_CURRENCY),
    pricingUpdatedAt: z.number().int().describe('Epoch milliseconds of the latest price change'),
    payment: z.string().describe('How to pay'),
    endpoints: z.array(DiscoveryEndpointSchema),
    rpcUrl: z
      .string()
      .optional()
      .describe('Development mode only (extension): JSON-RPC URL of the local dev chain, so wallets read their test USDC balance without configuration'),
  })
  .meta({ id: 'AgentDiscovery' });

export const PricingEntrySchema = z
  .object({
    action: z.string(),
    method: z.enum(['GET', 'POST', 'PATCH', 'DELETE']),
    path: z.string(),
    price: z.string().describe('Decimal USDC'),
    amount: z.string().describe('Same price in atomic units (6 decimals)'),
    currency: z.literal(X402_CURRENCY),
    network: z.literal(X402_NETWORK),
    priceUpdatedAt: z.number().int(),
  })
  .meta({ id: 'AgentPrice' });

export const PricingResponseSchema = z
  .object({
    ok: z.literal(true),
    currency: z.literal(X402_CURRENCY),
    network: z.literal(X402_NETWORK),
    recipient: z.string(),
    pricingUpdatedAt: z.number().int(),
    pricing: z.array(PricingEntrySchema),
  })
  .meta({ id: 'AgentPricing' });

export const describeApi = {
  name: 'x402.describe_api',
  method: 'GET',
  path: '/api/x402',
  price: '0',
  description: 'Describe the paid Agent API: network, recipient, currency, how to pay, and every action with its price and input schema.',
  params: NoParams,
  input: NoBody,
  output: DiscoveryDocumentSchema,
  identity: false,
  readOnly: true,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const listPricing = {
  name: 'x402.list_pricing',
  method: 'GET',
  path: '/api/x402/pricing',
  price: '0',
  description: 'Current price of every Agent API action in USDC, with the time each price last changed.',
  params: NoParams,
  input: NoBody,
  output: PricingResponseSchema,
  identity: false,
  readOnly: true,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const suggestSiteName = {
  name: 'x402.suggest_site_name',
  method: 'GET',
  path: '/api/x402/name',
  price: '0',
  description: 'Suggest a readable app name (slug) that is free right now, for create_app_from_html.',
  params: NoParams,
  input: NoBody,
  output: z.object({ ok: z.literal(true), name: z.string().describe('An available app name') }),
  identity: false,
  readOnly: true,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const AgentAppListEntrySchema = z
  .object({
    appId: z.string(),
    appName: z.string(),
    visibility: VisibilitySchema,
    hasPassword: z.boolean(),
    published: z.boolean(),
    status: z.enum(['created', 'updated', 'published']),
    url: z.string(),
    pathUrl: z.string(),
    entryPoint: z.string(),
    fileCount: z.number().int(),
    bytes: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    suspension: SiteSuspensionSchema.nullable(),
  })
  .meta({ id: 'AgentAppListEntry' });

export const listApps = {
  name: 'x402.list_apps',
  method: 'GET',
  path: '/api/x402/apps',
  price: '0',
  description:
    'List the apps owned by the calling wallet, which proves itself with a zero-value signed x402 authorization (the 402 asks for amount 0; nothing is transferred).',
  params: NoParams,
  input: NoBody,
  output: z.object({ ok: z.literal(true), apps: z.array(AgentAppListEntrySchema) }),
  identity: true,
  readOnly: true,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const createAppFromHtml = {
  name: 'x402.create_app_from_html',
  method: 'POST',
  path: '/api/x402/apps',
  price: '0.007',
  description: 'Create a hosted app from one complete HTML document (served as index.html). The paying wallet owns the app. A password makes it private.',
  params: NoParams,
  input: z.object({
    name: z.string().min(1).max(63).describe('Desired app name (slug, a DNS label); see suggest_site_name'),
    html: z.string().min(1).describe('Complete HTML document for index.html'),
    password: z.string().min(1).max(200).optional().describe('Makes the app private behind this password'),
    visibility: VisibilitySchema.optional().describe('Default public, or private when a password is given'),
  }),
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const updateAppFile = {
  name: 'x402.update_app_file',
  method: 'POST',
  path: '/api/x402/apps/:siteId/files',
  price: '0.003',
  description: 'Create or replace one text file of an app owned by the paying wallet.',
  params: SiteParams,
  input: z.object({
    path: relativePath,
    content: z.string().describe('UTF-8 file content'),
    contentType: z.string().max(200).optional().describe('Media type; guessed from the extension when omitted'),
  }),
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const updateAppMeta = {
  name: 'x402.update_app_meta',
  method: 'PATCH',
  path: '/api/x402/apps/:siteId',
  price: '0.001',
  description: 'Change the visibility and/or password of an app owned by the paying wallet. A password makes the app private; null removes it.',
  params: SiteParams,
  input: SiteAccessBodySchema,
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const publishApp = {
  name: 'x402.publish_app',
  method: 'POST',
  path: '/api/x402/apps/:siteId/publish',
  price: '0.002',
  description: 'Publish (or re-enable serving of) an app owned by the paying wallet.',
  params: SiteParams,
  input: NoBody,
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const unpublishApp = {
  name: 'x402.unpublish_app',
  method: 'POST',
  path: '/api/x402/apps/:siteId/unpublish',
  price: '0.001',
  description: 'Stop serving an app owned by the paying wallet (its files are kept; publish_app turns it back on).',
  params: SiteParams,
  input: NoBody,
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const deleteApp = {
  name: 'x402.delete_app',
  method: 'DELETE',
  path: '/api/x402/apps/:siteId',
  price: '0.001',
  description: 'Delete an app owned by the paying wallet, with its files, Tables and datasets.',
  params: SiteParams,
  input: NoBody,
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: true,
  idempotent: false,
} satisfies AgentAction;

export const UploadUrlEntrySchema = z
  .object({
    path: z.string(),
    size: z.number().int().describe('Exact byte size the upload must have'),
    type: z.string().describe('Media type the upload must be sent with (Content-Type)'),
    method: z.literal('PUT'),
    uploadUrl: z.string().describe('Presigned PUT URL (S3) or signed, expiring upload URL served by the service'),
    headers: z.record(z.string(), z.string()).describe('Headers to send with the PUT'),
    expiresAt: z.string().describe('ISO-8601 expiry of the URL'),
  })
  .meta({ id: 'AgentUploadUrl' });

export const createSiteUploadUrls = {
  name: 'x402.create_site_upload_urls',
  method: 'POST',
  path: '/api/x402/apps/:siteId/upload-urls',
  price: '0.001',
  description:
    'Get upload URLs for binary or large app files (images, PDFs, CSS, JS). PUT each file to its URL with the given headers, then call finalize_site_upload.',
  params: SiteParams,
  input: z.object({
    files: z
      .array(
        z.object({
          path: relativePath,
          size: z.number().int().min(0).describe('Byte size'),
          type: z.string().min(1).max(200).describe('Media type'),
        }),
      )
      .min(1)
      .max(SITE_UPLOAD_MAX_FILES),
  }),
  output: z.object({
    ok: z.literal(true),
    uploadToken: z.string().describe('Pass to finalize_site_upload'),
    expiresAt: z.string(),
    files: z.array(UploadUrlEntrySchema),
  }),
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: false,
} satisfies AgentAction;

export const finalizeSiteUpload = {
  name: 'x402.finalize_site_upload',
  method: 'POST',
  path: '/api/x402/apps/:siteId/upload-urls/finalize',
  price: '0.001',
  description:
    'Add the uploaded files to the app after checking each one arrived with the announced size and type; entryPoint becomes the file served for "/".',
  params: SiteParams,
  input: z.object({
    uploadToken: z.string().min(1),
    entryPoint: relativePath.describe('File served for "/", e.g. "index.html"'),
    files: z
      .array(z.object({ path: relativePath, size: z.number().int().min(0) }))
      .min(1)
      .max(SITE_UPLOAD_MAX_FILES),
  }),
  output: AgentAppResponseSchema,
  identity: true,
  readOnly: false,
  destructive: false,
  idempotent: true,
} satisfies AgentAction;

export const APP_ACTIONS = [
  describeApi,
  listPricing,
  suggestSiteName,
  listApps,
  createAppFromHtml,
  updateAppFile,
  updateAppMeta,
  publishApp,
  unpublishApp,
  deleteApp,
  createSiteUploadUrls,
  finalizeSiteUpload,
] as const;
