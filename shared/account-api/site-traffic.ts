import { z } from 'zod';

export const TrafficDaySchema = z.object({
  day: z.string().describe('UTC day, YYYY-MM-DD'),
  requests: z.number().int().describe('Answers of the site at its URL and its path form'),
  bytes: z.number().int().describe('Body bytes of those answers'),
  previewRequests: z.number().int().describe('Answers of its version previews, counted apart'),
  previewBytes: z.number().int(),
});

export const SiteTrafficQuerySchema = z.object({
  days: z.coerce.number().int().min(1).max(366).default(30).describe('How many days back, today included (1–366, default 30)'),
});

export const SiteTrafficResponseSchema = z
  .object({
    ok: z.literal(true),
    siteId: z.string(),
    days: z.array(TrafficDaySchema).describe('Oldest first, every day of the range (0 where nothing was served)'),
    total: TrafficDaySchema.omit({ day: true }),
    flushSeconds: z.number().describe('Each node adds what it counted every this many seconds: the last seconds may not show yet'),
  })
  .meta({ id: 'SiteTraffic' });

export type SiteTrafficAnswer = z.infer<typeof SiteTrafficResponseSchema>;
