import { z } from 'zod';

export const maxPriceArg = z
  .string()
  .regex(/^(0|[1-9]\d*)(\.\d{1,6})?$/)
  .optional()
  .describe('Most USDC you accept (default: the listed price; after "price changed", the new one)');
