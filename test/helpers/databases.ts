import { randomBytes } from 'node:crypto';
import pg from 'pg';

export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export function randomDatabaseName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** Runs one statement on the admin database (CREATE/DROP DATABASE cannot be parameterised). */
export async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createDatabase(adminUrl: string, name: string, template?: string): Promise<string> {
  await adminQuery(adminUrl, `create database "${name}"${template ? ` template "${template}"` : ''}`);
  return withDatabase(adminUrl, name);
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await adminQuery(adminUrl, `drop database if exists "${name}" with (force)`);
}
