// Text PostgreSQL cannot store: a NUL character (text and jsonb refuse it, 22P05) and a lone UTF-16
// surrogate (not Unicode; jsonb refuses its escape, 22P02, and text would silently get U+FFFD).
// Every input reaches the API either as a variable or as a literal in the document, so both are
// checked once, before anything executes, and refused as BAD_USER_INPUT naming where it was.
import { Kind, visit, type ASTNode, type DocumentNode } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import { badUserInput } from './schema/errors.ts';

export function useTextInputGuard(): Plugin {
  // A batch of 500 events walks about a megabyte of variables, so each walk is done once: variables
  // onParams found storable are not walked again at execution, and a document (Yoga caches parsed
  // documents) is visited once.
  const storableVariables = new WeakSet<object>();
  const literals = new WeakMap<DocumentNode, string | null>();
  const check = (args: { document: DocumentNode; variableValues?: Record<string, unknown> | null }) => {
    const variables = args.variableValues;
    const where = (variables && storableVariables.has(variables) ? undefined : unstorableVariable(variables)) ?? unstorableLiteral(args.document);
    return where === undefined ? undefined : refusal(where);
  };
  const unstorableLiteral = (document: DocumentNode) => {
    let where = literals.get(document);
    if (where === undefined) literals.set(document, (where = firstUnstorableLiteral(document) ?? null));
    return where ?? undefined;
  };
  return {
    // HTTP variables are refused before parsing and coercion, so this refusal is the answer whatever
    // else is wrong with the request; the WebSocket transport skips onParams and is checked below.
    onParams({ params, setResult }) {
      const where = unstorableVariable(params.variables);
      if (where !== undefined) setResult({ errors: [refusal(where)] });
      else if (params.variables) storableVariables.add(params.variables);
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
  return variables ? firstUnstorable(variables, '$') : undefined;
}

/**
 * The path of the first string or object key that cannot be stored among the values of `named`,
 * spelled from `prefix` and the value's name: `firstUnstorable({ 'filter.payloadContains': parsed }, '')`
 * gives `filter.payloadContains.a[0]`. The names themselves are not checked.
 */
export function firstUnstorable(named: Record<string, unknown>, prefix: string): string | undefined {
  // Iterative: a variable can be a JSON value nested far deeper than the stack allows recursion.
  // Only objects and arrays are stacked, each with the step that led to it; strings are checked
  // where they are found, and a path is spelled out only for the one refused.
  const root: Container = { value: named, parent: null, step: '' };
  const stack: Container[] = [root];
  while (stack.length > 0) {
    const container = stack.pop()!;
    const value = container.value;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const where = enter(value[i], container, i);
        if (where !== undefined) return where;
      }
    } else {
      for (const key of Object.keys(value)) {
        // The names are not checked: variable names are the document's to refuse.
        if (container !== root && isUnstorable(key)) return `${pathOf(container, prefix)} (a key)`;
        const where = enter(value[key], container, key);
        if (where !== undefined) return where;
      }
    }
  }
  return undefined;

  function enter(item: unknown, parent: Container, step: string | number): string | undefined {
    if (typeof item === 'string') return isUnstorable(item) ? pathOf({ parent, step }, prefix) : undefined;
    if (item !== null && typeof item === 'object') stack.push({ value: item as Record<string, unknown>, parent, step });
    return undefined;
  }
}

interface Container {
  value: Record<string, unknown> | unknown[];
  parent: Container | null;
  /** The variable's name, object key or array index that leads here from `parent`. */
  step: string | number;
}

/** The path to a container, or to a string (its parent and step alone). */
function pathOf(at: Pick<Container, 'parent' | 'step'>, prefix: string): string {
  const steps: string[] = [];
  for (let c: Pick<Container, 'parent' | 'step'> | null = at; c?.parent; c = c.parent) {
    steps.push(typeof c.step === 'number' ? `[${c.step}]` : c.parent.parent ? `.${c.step}` : `${prefix}${c.step}`);
  }
  return steps.reverse().join('');
}

function firstUnstorableLiteral(document: DocumentNode): string | undefined {
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
