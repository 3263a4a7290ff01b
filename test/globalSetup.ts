// Starts one PostgreSQL for the run, migrates a template database once with the service's own
// migrator, and hands both to test files; each file clones its own database from the template.
import type { TestProject } from 'vitest/node';
import { migrate } from '../src/db/migrate.ts';
import { ensureBrokers } from './helpers/brokers.ts';
import { createDatabase, dropDatabase, randomDatabaseName } from './helpers/databases.ts';
import { startTestServer } from './helpers/postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    adminUrl: string;
    templateDatabase: string;
    serverKind: string;
  }
}

export default async function setup(project: TestProject) {
  const started = await ensureBrokers(); // RabbitMQ, Redis, NATS: started only when their port is closed
  if (started.length > 0) process.stdout.write(`test brokers started: ${started.join(', ')}\n`);
  const server = await startTestServer();
  const template = randomDatabaseName('lazarus_tpl');
  const templateUrl = await createDatabase(server.adminUrl, template);
  await migrate(templateUrl);
  project.provide('adminUrl', server.adminUrl);
  project.provide('templateDatabase', template);
  project.provide('serverKind', server.kind);
  process.stdout.write(`test PostgreSQL: ${server.kind}\n`);
  return async () => {
    await dropDatabase(server.adminUrl, template);
    await server.stop();
  };
}
