import { desc, eq } from 'drizzle-orm';
import type { Config } from '../kernel/config.js';
import { abuseReports, sites } from '../db/schema/index.js';
import type { DbOrTx } from '../db/client.js';
import { newId } from '../kernel/ids.js';
import { AppError } from '../kernel/app-error.js';
import { siteSlugFromHost } from '../sites/serving.js';
import { SLUG_PATTERN } from '../sites/slugs.js';

export const ABUSE_CATEGORIES = ['phishing', 'malware', 'spam', 'illegal', 'copyright', 'privacy', 'other'] as const;
export type AbuseCategory = (typeof ABUSE_CATEGORIES)[number];
export const MAX_REPORT_MESSAGE = 4000;
const MAX_URL = 2000;
const MAX_CONTACT = 320;

export interface AbuseReportInput {
  url: string;
  category: string;
  message: string;
  contact?: string;
  address: string;
}

export interface AbuseReport {
  id: string;
  url: string;
  siteId: string | null;
  siteSlug: string;
  category: string;
  message: string;
  contact: string | null;
  address: string;
  createdAt: string;
}

/**
 * The slug of the hosted site a URL names: `<scheme>://<slug>.<sites domain>[:port]/…`, or
 * `{base_url}/s/<slug>/…`. Null for anything else.
 */
export function reportedSiteSlug(config: Pick<Config, 'baseUrl' | 'sitesDomain'>, raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const onHost = siteSlugFromHost(url.host, config.sitesDomain);
  if (onHost) return SLUG_PATTERN.test(onHost) ? onHost : null;
  const base = new URL(config.baseUrl);
  const path = /^\/s\/([^/]+)(?:\/|$)/.exec(url.pathname);
  if (url.host.toLowerCase() === base.host.toLowerCase() && path && SLUG_PATTERN.test(path[1]!.toLowerCase())) return path[1]!.toLowerCase();
  return null;
}

/** Stores a report about a page this service hosts; 400 naming the field for anything else. */
export async function createAbuseReport(db: DbOrTx, config: Pick<Config, 'baseUrl' | 'sitesDomain'>, input: AbuseReportInput, now: Date): Promise<AbuseReport> {
  const url = input.url.trim();
  const message = input.message.trim();
  const contact = input.contact?.trim() || null;
  const problem = (field: string, text: string) => new AppError('validation_failed', `${field}: ${text}`, { issues: [{ field, message: text }] });
  if (!url || url.length > MAX_URL) throw problem('url', `the address of the page you report (at most ${MAX_URL} characters)`);
  const slug = reportedSiteSlug(config, url);
  if (!slug) {
    const base = new URL(config.baseUrl);
    throw problem('url', `not a page hosted here: give its address, https://<name>.${config.sitesDomain}/… or ${base.origin}/s/<name>/…`);
  }
  if (!(ABUSE_CATEGORIES as readonly string[]).includes(input.category)) throw problem('category', `one of ${ABUSE_CATEGORIES.join(', ')}`);
  if (!message || message.length > MAX_REPORT_MESSAGE) throw problem('message', `what is wrong with the page (1 to ${MAX_REPORT_MESSAGE} characters)`);
  if (contact && contact.length > MAX_CONTACT) throw problem('contact', `at most ${MAX_CONTACT} characters`);
  const [site] = await db.select({ id: sites.id }).from(sites).where(eq(sites.slug, slug));
  if (!site) throw problem('url', `no site named "${slug}" is hosted here`);
  const [row] = await db
    .insert(abuseReports)
    .values({ id: newId('abuse'), url, siteId: site.id, siteSlug: slug, category: input.category, message, contact, address: input.address, createdAt: now })
    .returning();
  return toReport(row!);
}

/** The newest reports first. */
export async function listAbuseReports(db: DbOrTx, options: { limit: number; site?: string }): Promise<AbuseReport[]> {
  const query = db.select().from(abuseReports);
  const filtered = options.site
    ? query.where(options.site.startsWith('site_') ? eq(abuseReports.siteId, options.site) : eq(abuseReports.siteSlug, options.site))
    : query;
  return (await filtered.orderBy(desc(abuseReports.createdAt)).limit(options.limit)).map(toReport);
}

function toReport(row: typeof abuseReports.$inferSelect): AbuseReport {
  return { ...row, createdAt: row.createdAt.toISOString() };
}
