import { readdir, readFile } from 'node:fs/promises';
import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_OPERATIONS } from '../src/api/examples.ts';
import { schema } from '../src/api/schema/schema.ts';

describe('read-side documentation', () => {
  it('shows only GraphQL that validates against the schema, in the README, docs/ and GraphiQL', async () => {
    const docs = (await readdir(new URL('../docs/', import.meta.url))).filter((f) => f.endsWith('.md')).map((f) => `../docs/${f}`);
    const texts = await Promise.all(['../README.md', ...docs].map((f) => readFile(new URL(f, import.meta.url), 'utf8')));
    const blocks = texts.flatMap((text) => [...text.matchAll(/```graphql\n([\s\S]*?)```/g)].map((m) => m[1]!));
    expect(blocks.length).toBeGreaterThan(0);
    for (const query of [...blocks, ...EXAMPLE_OPERATIONS.map((op) => op.query)]) {
      expect(validate(schema, parse(query)).map((e) => e.message)).toEqual([]);
    }
  });
});
