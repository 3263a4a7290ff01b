import { parse, validate } from 'graphql';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_OPERATIONS } from '../src/api/examples.ts';
import { schema } from '../src/api/schema/schema.ts';

describe('GraphiQL example operations', () => {
  it.each(EXAMPLE_OPERATIONS.map((op) => [op.query.split('\n')[0]!, op]))('%s validates against the schema', (_title, op) => {
    expect(validate(schema, parse(op.query)).map((e) => e.message)).toEqual([]);
    if (op.variables) expect(() => JSON.parse(op.variables!)).not.toThrow();
  });
});
