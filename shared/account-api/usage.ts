import { z } from 'zod';

export const UsageEntrySchema = z.object({
  used: z.number().int().describe('Current amount'),
  limit: z.number().int().nullable().describe('The limit that applies, or null when none'),
  unit: z.string().describe('What is counted'),
});

export const UsageResponseSchema = z
  .object({
    ok: z.literal(true),
    accountId: z.string(),
    usage: z.record(z.string(), UsageEntrySchema).describe('Counters by name: sites, files, storageBytes, and more as resources are added'),
    rateLimit: z.object({ requestsPerMinute: z.number().int().nullable().describe('Per credential; null when off') }),
  })
  .meta({ id: 'Usage' });

export type UsageEntry = z.infer<typeof UsageEntrySchema>;
