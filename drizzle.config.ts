import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './service/db/schema/*.ts',
  out: './drizzle',
});
