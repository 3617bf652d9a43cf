import { randomInt } from 'node:crypto';
import { z } from 'zod';

/** Names that must never be a site: they would shadow service hosts or paths. */
const RESERVED = new Set(['www', 'api', 'app', 'admin', 'dashboard', 'oauth', 'mcp', 'static', 'assets', 'mail', 'docs', 'status', 'svc', 's', 'localhost']);

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const SlugSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(SLUG_PATTERN, 'use 1–63 lower-case letters, digits and inner hyphens (a DNS label)')
  .refine((s) => !RESERVED.has(s), 'this name is reserved');

const ADJECTIVES = [
  'amber',
  'brave',
  'calm',
  'crisp',
  'daring',
  'eager',
  'fancy',
  'gentle',
  'golden',
  'happy',
  'jolly',
  'kind',
  'lively',
  'lucky',
  'mellow',
  'nimble',
  'quiet',
  'rapid',
  'sunny',
  'swift',
  'tidy',
  'vivid',
  'witty',
  'zesty',
];
const NOUNS = [
  'otter',
  'falcon',
  'maple',
  'harbor',
  'comet',
  'meadow',
  'pixel',
  'river',
  'summit',
  'willow',
  'canyon',
  'ember',
  'lagoon',
  'orchid',
  'prairie',
  'quartz',
  'sparrow',
  'tundra',
  'valley',
  'breeze',
  'cedar',
  'delta',
  'glacier',
  'island',
];

/** A readable random name such as `swift-otter-4821`. */
export function randomSlug(): string {
  const a = ADJECTIVES[randomInt(ADJECTIVES.length)];
  const n = NOUNS[randomInt(NOUNS.length)];
  return `${a}-${n}-${randomInt(1000, 10000)}`;
}
