import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { printSchemaSdl } from '../src/api/schema/schema.ts';

describe('schema.graphql', () => {
  it('matches the schema built from the code (run `npm run schema` after changing the API)', async () => {
    const committed = await readFile(new URL('../schema.graphql', import.meta.url), 'utf8');
    expect(committed).toBe(printSchemaSdl());
  });
});
