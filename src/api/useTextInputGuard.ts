// Text PostgreSQL cannot store: a NUL character (text and jsonb refuse it, 22P05) and a lone UTF-16
// surrogate (not Unicode; jsonb refuses its escape, 22P02, and text would silently get U+FFFD).
// Every input reaches the API either as a variable or as a literal in the document, so both are
// checked once, before anything executes, and refused as BAD_USER_INPUT naming where it was.
import { Kind, visit, type ASTNode, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { badUserInput } from './schema/errors.ts';

export function useTextInputGuard(): Plugin {
  const check = (args: { document: DocumentNode; variableValues?: Record<string, unknown> | null }) => {
    const where = unstorableVariable(args.variableValues) ?? unstorableLiteral(args.document);
    return where === undefined ? undefined : refusal(where);
  };
  return {
    // HTTP variables are refused before parsing and coercion, so this refusal is the answer whatever
    // else is wrong with the request; the WebSocket transport skips onParams and is checked below.
    onParams({ params, setResult }) {
      const where = unstorableVariable(params.variables);
      if (where !== undefined) setResult({ errors: [refusal(where)] });
    },
    onExecute({ args, setResultAndStopExecution }) {
      const error = check(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = check(args);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}

function refusal(field: string) {
  return badUserInput(`${field} contains a NUL character or an unpaired UTF-16 surrogate, which cannot be stored`, { field });
}

/** The path (`$input.payload.a[0]`) of the first string or object key that cannot be stored. */
export function unstorableVariable(variables: Record<string, unknown> | null | undefined): string | undefined {
  if (!variables) return undefined;
  // Iterative: a variable can be a JSON value nested far deeper than the stack allows recursion.
  const stack: [unknown, string][] = Object.entries(variables).map(([name, value]) => [value, `$${name}`]);
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (isUnstorable(value)) return path;
    } else if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push([item, `${path}[${i}]`]));
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (isUnstorable(key)) return `${path} (a key)`;
        stack.push([item, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

function unstorableLiteral(document: DocumentNode): string | undefined {
  let found: string | undefined;
  visit(document, {
    StringValue(node, _key, parent, _path, ancestors) {
      if (found === undefined && isUnstorable(node.value)) found = literalPath([...ancestors, parent as ASTNode]);
    },
    ObjectField(node) {
      if (found === undefined && isUnstorable(node.name.value)) found = node.name.value;
    },
  });
  return found;
}

/** The argument and input fields around a literal: `filter.errorText`. */
function literalPath(ancestors: readonly (ASTNode | readonly ASTNode[])[]): string {
  const names: string[] = [];
  for (const node of ancestors) {
    if (Array.isArray(node) || !('kind' in node)) continue;
    const n = node as ASTNode;
    if (n.kind === Kind.ARGUMENT || n.kind === Kind.OBJECT_FIELD) names.push(n.name.value);
  }
  return names.join('.') || 'a string literal';
}

function isUnstorable(text: string): boolean {
  return text.includes('\u0000') || !text.isWellFormed();
}
