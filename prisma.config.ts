// Prisma 7 reads the datasource URL here. `prisma generate` needs no database, so a placeholder keeps
// it working on machines without DATABASE_URL; the service itself never reads this file.
import { defineConfig } from 'prisma/config';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost:5432/lazarus' },
});
