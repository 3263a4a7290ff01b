// The dashboard's most frequent request, a page of `deadLetters`, answered without the GraphQL
// executor: the page's rows are read as the resolver reads them (readDeadLetterConnection) and
// written straight into the response's JSON text. For bench:read's 50-row pages the executor,
// even compiled by graphql-jit, and the serialisation of its result took about as long as the
// page's own SQL statement (docs/benchmarks.md, session 8).
//
// Answers must not change, byte for byte (test/graphql.directPages.test.ts compares both paths),
// so only what can be written the same way is served here; everything else runs as before:
// - an operation whose only root field is `deadLetters`, without directives (fragments are inlined
//   and fields of one response key merged, as the executor does);
// - fields of the connection, its edges and page info, and the dead letter's own columns and
//   `error` (not `deliveryAttempts`, `history` or `timeline`, which read other tables);
// - a caller with the viewer role, and variables and arguments that coerce.
// Until the first statement runs, any error hands the request to the executor, which reports it as
// it always has. Once a statement has run, an error is reported at the field that failed, in the
// executor's shape, rather than running the statement again.
//
// Two ways in. A document is first served from `onExecute`, after Yoga has parsed and validated it.
// Its query text is then known to be valid, so later requests with the same text are served from
// `onParams`, before Yoga builds a context, looks the text up in its parse and validation caches and
// runs the execute hooks: ~0.1 ms of a ~0.7 ms page. There, this file checks what those steps
// would refuse: the request's parameters, the body cap, and the caller's role.
import {
  GraphQLError,
  getArgumentValues,
  getNamedType,
  getOperationAST,
  getVariableValues,
  isEnumType,
  isLeafType,
  isNonNullType,
  locatedError,
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLLeafType,
  type GraphQLObjectType,
  type GraphQLSchema,
  type SelectionSetNode,
} from 'graphql';
import type { GraphQLParams, Plugin, YogaInitialContext } from 'graphql-yoga';
import { hasRole } from '../auth/principal.ts';
import { parseTimestamp } from '../db/createDb.ts';
import type { DeadLetterColumn, DeadLetterPageRow } from '../db/sql/deadLetterPage.ts';
import type { GraphQLContext } from './builder.ts';
import {
  countLimit,
  countUpTo,
  readDeadLetterConnection,
  type BoundedCount,
  type DeadLetterConnectionArgs,
  type DeadLetterConnectionPage,
  type Edge,
} from './deadLetterConnection.ts';
import { DEAD_LETTER_FIELD_COLUMNS } from './selection.ts';
import { hasDirectives } from './useCompiledQueries.ts';

/** Writes one value (a row, an edge, a page) as JSON text; throws when the executor would fail. */
type Write<T> = (source: T) => string;

/** What a page's count fields answered, by response key, read before anything is written. */
interface Answered {
  page: DeadLetterConnectionPage;
  counts: Map<string, number | BoundedCount>;
}

interface CountField {
  key: string;
  nodes: FieldNode[];
  /** boundedCount's limit; totalCount has none. */
  limit?: number;
}

/** An operation this file answers, planned once per document. */
interface Plan {
  /** The nodes of `deadLetters`. */
  nodes: FieldNode[];
  /** The response key of `deadLetters`. */
  key: string;
  /** Coerces the variables and arguments of one request; throws what the executor would report. */
  prepare: (variables: Record<string, unknown>) => Prepared;
}

interface Prepared {
  args: DeadLetterConnectionArgs;
  columns: ReadonlySet<DeadLetterColumn>;
  counts: CountField[];
  write: Write<Answered>;
}

/** Thrown while planning: this operation is left to the executor. */
class Unsupported extends Error {}

// The dead letter's fields that are not their column as it is: the resolvers of deadLetter.ts.
const bigintAsString = (value: unknown) => `"${(value as bigint).toString()}"`;
const ROW_WRITES: Record<string, [DeadLetterColumn, ((value: unknown) => string)?]> = {
  id: ['id', bigintAsString],
  orderingSeq: ['orderingSeq', bigintAsString],
  maxAttemptsOverride: ['maxAttempts'],
};
const ERROR_COLUMNS: Record<string, DeadLetterColumn> = { kind: 'errorKind', message: 'errorMessage', stack: 'errorStack' };

export interface DirectPagesOptions {
  /** Called once for each request answered here, with the hook that answered it (tests). */
  onServed?: (hook: 'onParams' | 'onExecute') => void;
}

/** What `onParams` needs of the server, which builds it into each request's context later. */
export interface DirectPagesServer {
  db: GraphQLContext['db'];
  authenticate: (request: Request) => GraphQLContext['principal'];
  /** The body cap of edge.ts: a larger body is refused there, not served here. */
  maxBodyBytes: number;
}

// Query texts whose document passed Yoga's validation and has a plan, for `onParams`. Bounded: a
// text is kept only while there is room, and only up to MAX_KNOWN_TEXT characters.
const MAX_KNOWN_TEXTS = 500;
const MAX_KNOWN_TEXT = 16_384;

// The parameters Yoga's useCheckGraphQLQueryParams accepts without complaint; anything else goes
// on to it, to be refused there.
const PARAM_NAMES = new Set(['query', 'variables', 'operationName', 'extensions']);
const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
function acceptableParams(params: GraphQLParams): boolean {
  for (const key in params) if (params[key as keyof GraphQLParams] != null && !PARAM_NAMES.has(key)) return false;
  return (
    (params.variables == null || isPlainObject(params.variables)) &&
    (params.extensions == null || isPlainObject(params.extensions)) &&
    (params.operationName == null || typeof params.operationName === 'string')
  );
}

export function useDirectPages(schema: GraphQLSchema, server: DirectPagesServer, options: DirectPagesOptions = {}): Plugin {
  const plans = new WeakMap<DocumentNode, Map<string, Plan | null>>();
  const planOf = (document: DocumentNode, operationName: string | null | undefined): Plan | null => {
    let byName = plans.get(document);
    if (!byName) plans.set(document, (byName = new Map()));
    const name = operationName ?? '';
    let plan = byName.get(name);
    if (plan === undefined) {
      try {
        plan = planOperation(schema, document, operationName);
      } catch {
        plan = null; // Unsupported, or anything else planning trips on: the executor answers
      }
      byName.set(name, plan);
    }
    return plan;
  };
  const known = new Map<string, DocumentNode>();
  // A statement that failed in onParams, by the request's parameters: the request goes on through
  // Yoga, and onExecute returns this.
  const failures = new WeakMap<GraphQLParams, ExecutionResult>();
  return {
    async onParams({ params, request, setResult }) {
      const document = params.query === undefined ? undefined : known.get(params.query);
      if (!document || !acceptableParams(params)) return;
      const plan = planOf(document, params.operationName);
      if (!plan || Number(request.headers.get('content-length') ?? 0) > server.maxBodyBytes) return;
      const result = await answer(server.db, server.authenticate(request), plan, params.variables ?? {});
      if (result === null) return;
      if ('failed' in result) {
        failures.set(params, result.failed);
        return;
      }
      options.onServed?.('onParams');
      setResult(textResult(result.text));
    },
    onExecute({ args, executeFn, setExecuteFn }) {
      // Yoga's HTTP requests carry their parameters in the context; the WebSocket server passes its own.
      const params = (args.contextValue as Partial<YogaInitialContext>).params;
      const failed = params && failures.get(params);
      if (failed) {
        setExecuteFn(() => failed);
        return;
      }
      const plan = planOf(args.document, args.operationName);
      if (!plan) return;
      const query = params?.query;
      if (query !== undefined && query.length <= MAX_KNOWN_TEXT && known.size < MAX_KNOWN_TEXTS) known.set(query, args.document);
      const fallback = executeFn;
      setExecuteFn(async (execution: ExecutionArgs) => {
        const ctx = execution.contextValue as GraphQLContext;
        const result = await answer(ctx.db, ctx.principal, plan, execution.variableValues ?? {});
        if (result === null) return fallback(execution);
        if ('failed' in result) return result.failed;
        options.onServed?.('onExecute');
        return textResult(result.text);
      });
    },
  };
}

/**
 * The response's text, or the error where a statement failed; null leaves the request to the
 * executor: a caller without the viewer role, variables or arguments that do not coerce, a value
 * the schema cannot represent.
 */
async function answer(
  db: GraphQLContext['db'], principal: GraphQLContext['principal'], plan: Plan, variables: Record<string, unknown>,
): Promise<{ text: string } | { failed: ExecutionResult } | null> {
  if (!hasRole(principal, 'viewer')) return null;
  let prepared: Prepared;
  try {
    prepared = plan.prepare(variables);
  } catch {
    return null;
  }
  const failed = (error: unknown, nodes: FieldNode[], path: string[]) => ({
    failed: { errors: [locatedError(error, nodes, path)], data: null },
  });
  let page: DeadLetterConnectionPage;
  try {
    page = await readDeadLetterConnection(db, prepared.args, prepared.columns);
  } catch (error) {
    return failed(error, plan.nodes, [plan.key]);
  }
  const counts = new Map<string, number | BoundedCount>();
  for (const count of prepared.counts) {
    try {
      counts.set(count.key, await (count.limit === undefined ? page.counts.total() : countUpTo(page.counts, count.limit)));
    } catch (error) {
      return failed(error, count.nodes, [plan.key, count.key]);
    }
  }
  let text: string;
  try {
    text = prepared.write({ page, counts });
  } catch {
    // A value the schema cannot represent (a null where it promises none): the executor says where.
    return null;
  }
  return { text: `{"data":{${JSON.stringify(plan.key)}:${text}}}` };
}

// Yoga writes a result through its own `stringify` when it has one; anything else that reads the
// result (another result processor, a plugin) gets `data` parsed from the same text.
function textResult(text: string): ExecutionResult {
  let data: ExecutionResult['data'];
  const result = { stringify: () => text };
  return Object.defineProperty(result, 'data', {
    enumerable: true,
    get: () => (data ??= (JSON.parse(text) as ExecutionResult).data),
  }) as ExecutionResult;
}

function planOperation(schema: GraphQLSchema, document: DocumentNode, operationName: string | null | undefined): Plan {
  const operation = getOperationAST(document, operationName);
  if (operation?.operation !== 'query') throw new Unsupported('not a query');
  if (hasDirectives(document)) throw new Unsupported('directives');
  const fragments = Object.fromEntries(document.definitions.flatMap((d) => (d.kind === 'FragmentDefinition' ? [[d.name.value, d]] : [])));
  const fieldsOf: FieldsOf = (type, sets) => collectFields(type, sets, fragments);
  const query = schema.getQueryType()!;
  const root = fieldsOf(query, [operation.selectionSet]);
  const [field] = root;
  if (root.length !== 1 || field!.nodes[0]!.name.value !== 'deadLetters') throw new Unsupported('not deadLetters alone');
  const { key, nodes } = field!;
  const fieldDef = query.getFields()['deadLetters']!;
  const connection = getNamedType(fieldDef.type) as GraphQLObjectType;
  const counts: Omit<CountField, 'limit'>[] = [];
  const columns = new Set<DeadLetterColumn>();
  const write = connectionWriter(fieldsOf, connection, subSelections(nodes), counts, columns);
  const boundedDef = connection.getFields()['boundedCount']!;
  const variableDefinitions = operation.variableDefinitions ?? [];
  const prepare = (variables: Record<string, unknown>): Prepared => {
    // The executor checks boundedCount's limit after reading the page; a bad one is its to report.
    const withLimits = counts.map((count) =>
      count.nodes[0]!.name.value === 'boundedCount' ? { ...count, limit: countLimit(getArgumentValues(boundedDef, count.nodes[0]!, variables)['limit'] as number) } : count,
    );
    return { args: getArgumentValues(fieldDef, nodes[0]!, variables) as DeadLetterConnectionArgs, columns, counts: withLimits, write };
  };
  // Without variables, every request of the document gets the same arguments.
  let constant: Prepared | undefined;
  return {
    nodes,
    key,
    prepare: (raw) => {
      if (variableDefinitions.length === 0) return (constant ??= prepare({}));
      const coerced = getVariableValues(schema, variableDefinitions, raw, { maxErrors: 1 });
      if (coerced.errors) throw coerced.errors[0]!;
      return prepare(coerced.coerced);
    },
  };
}

/** One response key of a selection and every field node the executor merges under it. */
interface Field {
  key: string;
  nodes: FieldNode[];
}

type FieldsOf = (type: GraphQLObjectType, sets: readonly SelectionSetNode[]) => Field[];

/**
 * The fields of selections on `type` in the executor's order (graphql-js collectFields): fragments
 * inlined, fields of one response key merged. The types here are object types, so a fragment on
 * any other type is left to the executor.
 */
function collectFields(type: GraphQLObjectType, sets: readonly SelectionSetNode[], fragments: Record<string, FragmentDefinitionNode>): Field[] {
  const byKey = new Map<string, FieldNode[]>();
  const spread = new Set<string>();
  const visit = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === 'Field') {
        const key = selection.alias?.value ?? selection.name.value;
        const nodes = byKey.get(key);
        if (nodes) nodes.push(selection);
        else byKey.set(key, [selection]);
        continue;
      }
      const fragment = selection.kind === 'InlineFragment' ? selection : fragments[selection.name.value];
      if (selection.kind === 'FragmentSpread') {
        if (spread.has(selection.name.value)) continue;
        spread.add(selection.name.value);
      }
      if (!fragment || (fragment.typeCondition && fragment.typeCondition.name.value !== type.name)) throw new Unsupported('fragment on another type');
      visit(fragment.selectionSet);
    }
  };
  for (const set of sets) visit(set);
  return [...byKey].map(([key, nodes]) => ({ key, nodes }));
}

function subSelections(nodes: readonly FieldNode[]): SelectionSetNode[] {
  return nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet] : []));
}

function objectWriter<T>(fieldsOf: FieldsOf, type: GraphQLObjectType, sets: readonly SelectionSetNode[], entry: (field: Field, def: GraphQLField<unknown, unknown>) => Write<T>): Write<T> {
  const fields = fieldsOf(type, sets).map((field): [string, Write<T>] => {
    const name = field.nodes[0]!.name.value;
    if (name === '__typename') {
      const typeName = JSON.stringify(type.name);
      return [field.key, () => typeName];
    }
    const def = type.getFields()[name];
    if (!def) throw new Unsupported('unknown field');
    return [field.key, entry(field, def)];
  });
  const prefixes = fields.map(([key], i) => `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`);
  const writes = fields.map(([, write]) => write);
  return (source) => {
    let out = '';
    for (let i = 0; i < writes.length; i++) out += prefixes[i]! + writes[i]!(source);
    return `${out}}`;
  };
}

function noArguments(field: Field): void {
  if (field.nodes.some((node) => node.arguments?.length)) throw new Unsupported('arguments');
}

/** A leaf as the executor completes it: the type's serialize, then null checks. */
function leafWriter<T>(field: Field, def: GraphQLField<unknown, unknown>, read: (source: T) => unknown): Write<T> {
  const write = leafValueWriter(field, def);
  return (source) => write(read(source));
}

/** The same, of a value already read; `write` replaces the type's serialize. */
function leafValueWriter(field: Field, def: GraphQLField<unknown, unknown>, write?: (value: unknown) => string): (value: unknown) => string {
  noArguments(field);
  const type = getNamedType(def.type);
  if (!isLeafType(type)) throw new Unsupported('not a leaf');
  const written = write ?? valueWriter(type);
  const nonNull = isNonNullType(def.type);
  return (value) => {
    if (value == null) {
      if (nonNull) throw new GraphQLError(`null for non-null ${def.name}`);
      return 'null';
    }
    return written(value);
  };
}

// A page row's timestamp is PostgreSQL's text. In UTC ('2026-11-22 07:09:42.861185+00') it is
// rewritten as toISOString would write it (milliseconds truncated, as pg's parser truncates them);
// any other zone or year goes through pg's parser and toISOString, as the executor does.
// The shape is checked by position, not by a regular expression (50 timestamps a page): PostgreSQL
// writes a timestamptz in ISO style as digits and separators only, so a 4-digit year ('-' at 4),
// ' ' at 10, ':' at 13 and 16, no fraction (22 characters) or '.' and 1-6 digits (24-29), and
// '+00' last. 'infinity', BC dates and 5-digit years fail it.
export function isoOf(text: string): string {
  const n = text.length;
  const utc =
    (n === 22 || (n >= 24 && n <= 29 && text[19] === '.')) &&
    text[4] === '-' && text[10] === ' ' && text[13] === ':' && text[16] === ':' && text.endsWith('+00');
  if (!utc) return parseTimestamp(text).toISOString();
  const ms = n > 22 ? `${text.slice(20, -3)}00`.slice(0, 3) : '000';
  return `${text.slice(0, 10)}T${text.slice(11, 19)}.${ms}Z`;
}

// What serialize returns for the values pages hold, without its checks: a string for String and
// ID, an int32 for Int, a boolean, an enum's own name. Anything else goes through serialize.
const isInt32 = (value: unknown): value is number => typeof value === 'number' && (value | 0) === value;
function valueWriter(type: GraphQLLeafType): (value: unknown) => string {
  const serialized = (value: unknown) => {
    const out = type.serialize(value);
    if (out == null) throw new GraphQLError(`${type.name} serialised to null`);
    return JSON.stringify(out);
  };
  if (isEnumType(type)) {
    const names = new Map(type.getValues().map((v) => [v.value, JSON.stringify(v.name)]));
    return (value) => names.get(value) ?? serialized(value);
  }
  switch (type.name) {
    case 'String':
    case 'ID':
      return (value) => (typeof value === 'string' ? JSON.stringify(value) : serialized(value));
    case 'Int':
      return (value) => (isInt32(value) ? String(value) : serialized(value));
    case 'Boolean':
      return (value) => (value === true ? 'true' : value === false ? 'false' : serialized(value));
    default:
      return serialized;
  }
}

function connectionWriter(fieldsOf: FieldsOf, type: GraphQLObjectType, sets: readonly SelectionSetNode[], counts: Omit<CountField, 'limit'>[], columns: Set<DeadLetterColumn>): Write<Answered> {
  return objectWriter<Answered>(fieldsOf, type, sets, (field, def) => {
    const { key, nodes } = field;
    const objectType = getNamedType(def.type) as GraphQLObjectType;
    switch (def.name) {
      case 'totalCount':
        counts.push({ key, nodes });
        return leafWriter(field, def, (a) => a.counts.get(key));
      case 'boundedCount': {
        counts.push({ key, nodes });
        const write = objectWriter<BoundedCount>(fieldsOf, objectType, subSelections(nodes), (f, d) => leafWriter(f, d, (b) => b[d.name as keyof BoundedCount]));
        return (a) => write(a.counts.get(key) as BoundedCount);
      }
      case 'pageInfo': {
        noArguments(field);
        type PageInfo = DeadLetterConnectionPage['pageInfo'];
        const write = objectWriter<PageInfo>(fieldsOf, objectType, subSelections(nodes), (f, d) => leafWriter(f, d, (p) => p[d.name as keyof PageInfo]));
        return (a) => write(a.page.pageInfo);
      }
      case 'edges': {
        noArguments(field);
        const write = edgeWriter(fieldsOf, objectType, subSelections(nodes), columns);
        return (a) => `[${a.page.edges.map(write).join(',')}]`;
      }
      default:
        throw new Unsupported(`connection field ${def.name}`);
    }
  });
}

function edgeWriter(fieldsOf: FieldsOf, type: GraphQLObjectType, sets: readonly SelectionSetNode[], columns: Set<DeadLetterColumn>): Write<Edge> {
  return objectWriter<Edge>(fieldsOf, type, sets, (field, def) => {
    if (def.name === 'cursor') return leafWriter(field, def, (e) => e.cursor);
    if (def.name !== 'node') throw new Unsupported(`edge field ${def.name}`);
    noArguments(field);
    const write = deadLetterWriter(fieldsOf, getNamedType(def.type) as GraphQLObjectType, subSelections(field.nodes), columns);
    return (e) => write(e.row);
  });
}

// The node is written 50 times a page, so its writer is compiled to one function, as graphql-jit
// compiles resolvers: `"{\"id\":" + W[0](d.id) + ...`. Each field reads a property named in code,
// so the read stays monomorphic. Only property names from COLUMNS (letters alone) enter the code;
// response keys and writers are passed in as values.
function deadLetterWriter(fieldsOf: FieldsOf, type: GraphQLObjectType, sets: readonly SelectionSetNode[], columns: Set<DeadLetterColumn>): Write<DeadLetterPageRow> {
  const prefixes: string[] = [];
  const writers: ((value: unknown) => string)[] = [];
  let code = '';
  const object = (objectType: GraphQLObjectType, selections: readonly SelectionSetNode[], entry: (field: Field, def: GraphQLField<unknown, unknown>) => void) => {
    fieldsOf(objectType, selections).forEach((field, i) => {
      prefixes.push(`${i === 0 ? '{' : ','}${JSON.stringify(field.key)}:`);
      code += `P[${prefixes.length - 1}] + `;
      const name = field.nodes[0]!.name.value;
      if (name === '__typename') {
        prefixes[prefixes.length - 1] += JSON.stringify(objectType.name);
        return;
      }
      const def = objectType.getFields()[name];
      if (!def) throw new Unsupported('unknown field');
      entry(field, def);
    });
    prefixes.push('}');
    code += `P[${prefixes.length - 1}] + `;
  };
  const leaf = (field: Field, def: GraphQLField<unknown, unknown>, property: DeadLetterColumn, write?: (value: unknown) => string) => {
    if (!/^[A-Za-z]+$/.test(property)) throw new Unsupported('property name');
    writers.push(leafValueWriter(field, def, write));
    code += `W[${writers.length - 1}](d.${property}) + `;
  };
  object(type, sets, (field, def) => {
    if (def.name === 'error') {
      noArguments(field);
      object(getNamedType(def.type) as GraphQLObjectType, subSelections(field.nodes), (f, d) => {
        const column = ERROR_COLUMNS[d.name]!;
        columns.add(column);
        leaf(f, d, column);
      });
      return;
    }
    const reads = DEAD_LETTER_FIELD_COLUMNS[def.name];
    // Fields that read no column of the row (other than id) read other tables.
    if (!reads || (reads.length === 0 && def.name !== 'id')) throw new Unsupported(`dead letter field ${def.name}`);
    for (const column of reads) columns.add(column);
    const [column, write] = ROW_WRITES[def.name] ?? [def.name as DeadLetterColumn, getNamedType(def.type).name === 'DateTime' ? (text: unknown) => `"${isoOf(text as string)}"` : undefined];
    leaf(field, def, column, write);
  });
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- see above: no client text in the code
  return new Function('P', 'W', `return (d) => ${code.slice(0, -3)};`)(prefixes, writers) as Write<DeadLetterPageRow>;
}
