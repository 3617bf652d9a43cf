import { index, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Reports the public sends through `/abuse` about a hosted page; the operator reads them (`svc-agent-host abuse list`). */
export const abuseReports = pgTable(
  'abuse_reports',
  {
    id: text('id').primaryKey(),
    /** The page reported, as the reporter gave it (a URL on the sites domain or under `/s/<slug>/`). */
    url: text('url').notNull(),
    /** The site the URL names, when it existed at the time of the report (the row may be gone since). */
    siteId: text('site_id'),
    siteSlug: text('site_slug').notNull(),
    /** One of ABUSE_CATEGORIES (service/abuse/reports.ts). */
    category: text('category').notNull(),
    message: text('message').notNull(),
    /** How to reach the reporter, when they gave it. */
    contact: text('contact'),
    /** The client address the report came from (as SVC_TRUST_PROXY derives it). */
    address: text('address').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('abuse_reports_created_idx').on(t.createdAt), index('abuse_reports_site_idx').on(t.siteId)],
);
