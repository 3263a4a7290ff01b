// `lazarus`: the console's concepts from a terminal, over the typed client. Reads LAZARUS_URL and
// LAZARUS_API_KEY. Exit codes: 0 done, 1 the API refused (validation, not found, conflict),
// 2 usage, 3 the key is missing, wrong or lacks the role, 4 the service cannot be reached.
import { Command, CommanderError, Option } from 'commander';
import { createClient } from 'graphql-ws';
import { LazarusClient, LazarusError } from '../client/lazarusClient.ts';
import { allowedFromStatuses, type OperatorAction } from '../domain/transitions.ts';
import { DeadLetterStatus, ErrorKind, RedriveStatus } from '../generated/prisma/enums.ts';

export const EXIT = { ok: 0, refused: 1, usage: 2, auth: 3, unreachable: 4 } as const;
/** Attempts at tail's first connection before it exits 4; once connected it reconnects without limit. */
export const TAIL_FIRST_CONNECT_ATTEMPTS = 3;

/** A usage error of ours: printed as one line, exit 2. */
const usage = (message: string) => new CommanderError(EXIT.usage, 'lazarus.usage', `lazarus: ${message}`);

interface Globals {
  url: string;
  apiKey?: string;
  json?: boolean;
}
interface FilterOptions {
  status?: string;
  type?: string;
  queue?: string;
  source?: string;
  kind?: string;
  errorText?: string;
  signature?: string;
  key?: string;
  dedupeKey?: string;
  payloadContains?: string;
  since?: string;
  until?: string;
  ids?: string;
}

const list = (value: string | undefined) => value?.split(',').map((s) => s.trim()).filter(Boolean);

/** The values of an enum-valued flag, upper-cased; a value the API does not know is a usage error. */
function enumList(value: string | undefined, what: string, known: Record<string, string>): string[] | undefined {
  const values = list(value);
  const unknown = values?.find((v) => !(v.toUpperCase() in known));
  if (unknown !== undefined) throw usage(`unknown ${what} '${unknown}'; one of ${Object.keys(known).join(', ')}`);
  return values?.map((v) => v.toUpperCase());
}

/** The DeadLetterFilter the options describe (only what was given). */
export function filterOf(o: FilterOptions): Record<string, unknown> {
  const f: Record<string, unknown> = {
    statuses: enumList(o.status, 'status', DeadLetterStatus),
    eventTypes: list(o.type),
    queues: list(o.queue),
    sources: list(o.source),
    errorKinds: enumList(o.kind, 'kind', ErrorKind),
    errorText: o.errorText,
    errorSignatures: o.signature ? [o.signature] : undefined,
    orderingKey: o.key,
    dedupeKeys: o.dedupeKey ? [o.dedupeKey] : undefined,
    payloadContains: o.payloadContains,
    ids: list(o.ids),
    createdAt: o.since || o.until ? { from: o.since, to: o.until } : undefined,
  };
  return Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined));
}

function withFilters(command: Command): Command {
  return command
    .option('--status <list>', 'statuses, comma-separated (pending, exhausted, …)')
    .option('--type <list>', 'event types')
    .option('--queue <list>', 'queues')
    .option('--source <list>', 'sources')
    .option('--kind <list>', 'error kinds (timeout, downstream_api, …)')
    .option('--error-text <text>', 'substring of the error message or stack (3+ characters)')
    .option('--signature <signature>', 'exact error signature')
    .option('--key <orderingKey>', 'exact ordering key')
    .option('--dedupe-key <key>', 'the dedupe key the producer recorded the event under')
    .option('--payload-contains <json>', 'JSON the payload must contain')
    .option('--since <time>', 'created at or after (ISO time)')
    .option('--until <time>', 'created before (ISO time)');
}

const ATTEMPT = 'attemptNumber outcome statusCode errorMessage durationMs failureKind permanentReason target responseBody responseBodyTruncated';
type ShownAttempt = {
  attemptNumber: number; outcome: string; statusCode: number | null; errorMessage: string | null; durationMs: number;
  failureKind: string | null; permanentReason: string | null; target: string | null; responseBody: string | null; responseBodyTruncated: boolean | null;
};

/** An attempt in `show`: its outcome line, then why it was the last, and the start of the answer. */
function attemptText(a: ShownAttempt): string {
  const message = a.errorMessage && a.errorMessage !== `HTTP ${a.statusCode}` ? `: ${a.errorMessage}` : '';
  const flat = a.responseBody?.replace(/\s+/g, ' ') ?? '';
  const body = flat.slice(0, 200);
  return [
    `attempt ${a.attemptNumber} ${a.outcome}${a.statusCode ? ` HTTP ${a.statusCode}` : ''}${a.failureKind ? ` ${a.failureKind}` : ''} in ${a.durationMs} ms${a.target ? ` (${a.target})` : ''}${message}`,
    ...(a.permanentReason ? [`      not retried: ${a.permanentReason}`] : []),
    ...(body ? [`      response: ${body}${a.responseBodyTruncated || body.length < flat.length ? ' …' : ''}`] : []),
  ].join('\n');
}

const ROW = 'id status eventType queue source attempts createdAt nextAttemptAt error { kind message }';
type Row = { id: string; status: string; eventType: string; queue: string; source: string; attempts: number; createdAt: string; nextAttemptAt: string | null; error: { kind: string; message: string } };

function line(r: Row): string {
  return [r.id.padStart(8), r.status.padEnd(10), r.eventType.padEnd(20), r.queue.padEnd(10), String(r.attempts).padStart(8), r.createdAt.padEnd(24), `${r.error.kind}: ${r.error.message}`].join('  ');
}
const HEADER = ['ID'.padStart(8), 'STATUS'.padEnd(10), 'EVENT TYPE'.padEnd(20), 'QUEUE'.padEnd(10), 'ATTEMPTS', 'CREATED AT'.padEnd(24), 'ERROR'].join('  ');

/** Why a status is left out of a bulk action, in the console's words (web/src/views/BulkActions.tsx). */
function whyNotEligible(action: OperatorAction, status: string): string {
  if (action === 'REQUEUE') return status === 'PROCESSING' ? 'being delivered now' : 'already finished (add --force to requeue it)';
  return `only pending or exhausted events can be ${action === 'RESOLVE' ? 'resolved' : 'discarded'}`;
}

const idsText = (r: { count?: number; ids?: string[] }) => (r.ids?.length ? `: ${r.ids.slice(0, 20).join(', ')}${r.count! > 20 ? ', …' : ''}` : '');

/** The --url, checked before anything is sent: a URL that cannot be parsed is a usage error. */
function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw usage(`--url '${url}' is not a URL (e.g. http://127.0.0.1:4000/graphql)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw usage(`--url '${url}' must start with http:// or https://`);
}

export function buildProgram(out: (text: string) => void): Command {
  const program = new Command('lazarus')
    .description('Find, inspect, retry and watch dead letters in a Lazarus service.')
    .addOption(new Option('--url <url>', 'GraphQL endpoint').env('LAZARUS_URL').default('http://127.0.0.1:4000/graphql'))
    .addOption(new Option('--api-key <key>', 'API key, sent as Authorization: Bearer').env('LAZARUS_API_KEY'))
    .option('--json', 'machine-readable output (JSON; tail prints one JSON object per line)')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: (s) => process.stderr.write(s) })
    .hook('preAction', () => checkUrl(program.opts<Globals>().url));
  const globals = () => program.opts<Globals>();
  const client = () => new LazarusClient({ url: globals().url, apiKey: globals().apiKey, retries: 2 });
  const print = (json: unknown, text: () => string) => out(globals().json ? `${JSON.stringify(json, null, 2)}\n` : `${text()}\n`);

  withFilters(program.command('list').description('dead letters matching the filters, newest first'))
    .option('--limit <n>', 'how many (1–500)', '50')
    .action(async (o: FilterOptions & { limit: string }) => {
      const data = await client().request<{ deadLetters: { boundedCount: { count: number; exact: boolean }; edges: { node: Row }[] } }>(
        `query ($filter: DeadLetterFilter, $first: Int) { deadLetters(filter: $filter, first: $first) { boundedCount { count exact } edges { node { ${ROW} } } } }`,
        { filter: filterOf(o), first: Number(o.limit) },
        { retry: true },
      );
      const rows = data.deadLetters.edges.map((e) => e.node);
      const { count, exact } = data.deadLetters.boundedCount;
      print({ count, exact, rows }, () => [...(rows.length ? [HEADER] : []), ...rows.map(line), `${rows.length} shown of ${count}${exact ? '' : '+'} matching`].join('\n'));
    });

  program
    .command('show <id>')
    .description('one dead letter: payload, error, timeline')
    .action(async (id: string) => {
      const data = await client().request<{ deadLetter: (Row & { payload: unknown; headers: unknown; orderingKey: string | null; error: { stack: string | null }; timeline: { at: string; action: { action: string; actor: string; reason: string | null } | null; attempt: ShownAttempt | null }[] }) | null }>(
        `query ($id: ID!) { deadLetter(id: $id) { ${ROW} orderingKey payload headers error { stack } timeline { at action { action actor reason } attempt { ${ATTEMPT} } } } }`,
        { id },
        { retry: true },
      );
      const d = data.deadLetter;
      if (!d) throw new LazarusError('NOT_FOUND', `there is no dead letter ${id}`);
      print(d, () =>
        [
          line(d),
          d.error.stack ? `\n${d.error.stack}` : '',
          `\npayload: ${JSON.stringify(d.payload, null, 2)}`,
          `headers: ${JSON.stringify(d.headers)}`,
          '\ntimeline:',
          ...d.timeline.map((e) => `  ${e.at}  ${e.action ? `${e.action.action} by ${e.action.actor}${e.action.reason ? ` (${e.action.reason})` : ''}` : attemptText(e.attempt!)}`),
        ].join('\n'),
      );
    });

  for (const [name, action, mutation, input, result] of [
    ['requeue', 'REQUEUE', 'requeueDeadLetters', 'RequeueDeadLettersInput', '... on RequeueResult { count dryRun ids withoutSource redrive { id status total } }'],
    ['resolve', 'RESOLVE', 'resolveDeadLetters', 'ResolveDeadLettersInput', '... on BulkChange { count dryRun ids }'],
    ['discard', 'DISCARD', 'discardDeadLetters', 'DiscardDeadLettersInput', '... on BulkChange { count dryRun ids }'],
  ] as const) {
    const command = withFilters(program.command(name).description(`${name} every dead letter matching the filters (or --ids)`))
      .option('--ids <list>', 'explicit ids instead of a filter')
      .option('--dry-run', 'report what would change, and what is not eligible and why; write nothing')
      .option('--yes', 'really do it')
      .option('--reason <text>', name === 'requeue' ? 'why' : 'why (required)');
    if (name === 'requeue') command.option('--rate <perSecond>', 'as a throttled redrive at this rate').option('--force', 'also requeue finished events').option('--reset-attempts', 'start attempts from zero')
      .option('--to-source', 'back where a broker bridge took each event from (its origin), not to the policy target');
    command.action(async (o: FilterOptions & { dryRun?: boolean; yes?: boolean; reason?: string; rate?: string; force?: boolean; resetAttempts?: boolean; toSource?: boolean }) => {
      if (!o.dryRun && !o.yes) throw usage(`${name} changes events: add --dry-run to see how many, or --yes to do it`);
      const ids = list(o.ids);
      const selection = ids ? { ids } : filterOf(o);
      const args: Record<string, unknown> = ids ? { ids } : { filter: selection };
      args.dryRun = Boolean(o.dryRun);
      if (o.reason !== undefined) args.reason = o.reason;
      if (name === 'requeue') Object.assign(args, { ratePerSecond: o.rate ? Number(o.rate) : undefined, force: o.force, resetAttempts: o.resetAttempts, destination: o.toSource ? 'SOURCE' : undefined });
      const data = await client().request<Record<string, { __typename: string; count?: number; dryRun?: boolean; ids?: string[]; withoutSource?: number | null; redrive?: { id: string; status: string; total: number } | null; code?: string; message?: string }>>(
        `mutation ($input: ${input}!) { ${mutation}(input: $input) { __typename ${result} ... on MutationError { code message } } }`,
        { input: args },
      );
      const r = data[mutation]!;
      if (r.code) throw new LazarusError(r.code, r.message ?? r.__typename);
      if (!r.dryRun) {
        return print(r, () =>
          r.redrive
            ? `redrive ${r.redrive.id} ${r.redrive.status}: ${r.redrive.total} events to requeue at its rate (lazarus redrives)`
            : `${name} ${r.count} dead letter${r.count === 1 ? '' : 's'}${idsText(r)}`,
        );
      }
      // As the console's dry run: the mutation counts what is eligible; the rest, by status, says why not.
      const stats = await client().request<{ deadLetterStats: { byStatus: { key: string; count: number }[] } }>(
        'query ($filter: DeadLetterFilter) { deadLetterStats(filter: $filter) { byStatus { key count } } }',
        { filter: selection },
        { retry: true },
      );
      const allowed: string[] = allowedFromStatuses(action, Boolean(o.force));
      const notEligible = stats.deadLetterStats.byStatus
        .filter((s) => !allowed.includes(s.key))
        .map((s) => ({ status: s.key, count: s.count, why: whyNotEligible(action, s.key) }));
      print({ ...r, notEligible }, () =>
        [`would ${name} ${r.count} dead letter${r.count === 1 ? '' : 's'}${o.toSource ? ' to source' : ''}${idsText(r)}`,
          ...(r.withoutSource ? [`${r.withoutSource} of them have no source (no origin, or its bridge is not declared): the requeue would be refused`] : []),
          ...notEligible.map((s) => `${s.count} ${s.status} not eligible: ${s.why}`)].join('\n'),
      );
    });
  }

  program
    .command('redrives')
    .description('throttled redrives, newest first')
    .option('--status <list>', 'running, paused, completed, cancelled, failed')
    .action(async (o: { status?: string }) => {
      const data = await client().request<{ redrives: { id: string; status: string; processed: number; total: number; requeued: number; skipped: number; ratePerSecond: number; createdBy: string; createdAt: string; reason: string | null }[] }>(
        `query ($statuses: [RedriveStatus!]) { redrives(first: 100, statuses: $statuses) { id status processed total requeued skipped ratePerSecond createdBy createdAt reason } }`,
        { statuses: enumList(o.status, 'status', RedriveStatus) ?? null },
        { retry: true },
      );
      print(data.redrives, () =>
        data.redrives.length
          ? data.redrives.map((r) => `${r.id.padStart(6)}  ${r.status.padEnd(9)}  ${r.processed}/${r.total} (${r.requeued} requeued, ${r.skipped} skipped) at ${r.ratePerSecond}/s  by ${r.createdBy}  ${r.createdAt}${r.reason ? `  ${r.reason}` : ''}`).join('\n')
          : 'no redrives',
      );
    });

  withFilters(program.command('tail').description('follow changes live, like tail -f (Ctrl-C to stop)'))
    .option('--after <cursor>', 'replay everything after this change cursor first')
    .action((o: FilterOptions & { after?: string }) => tail(globals(), filterOf(o), o.after ?? null, out));

  return program;
}

/**
 * Streams deadLetterChanged. The first connection gets TAIL_FIRST_CONNECT_ATTEMPTS tries, then the
 * service counts as unreachable (exit 4): a wrong URL should not wait forever. Once connected, a
 * dropped connection is retried without limit and resubscribes from the last cursor, so a tail
 * survives a restart of the service.
 */
function tail(g: Globals, filter: Record<string, unknown>, after: string | null, out: (text: string) => void): Promise<void> {
  const wsUrl = g.url.replace(/^http/, 'ws');
  const ws = createClient({
    url: wsUrl,
    connectionParams: g.apiKey ? { authorization: `Bearer ${g.apiKey}` } : {},
    retryAttempts: 0,
    lazy: true,
    connectionAckWaitTimeout: 10_000,
  });
  let cursor = after;
  let hasConnected = false;
  let failedFirstConnects = 0;
  ws.on('connected', () => (hasConnected = true));
  return new Promise<void>((resolve, reject) => {
    let dispose = () => {};
    let stopped = false;
    const end = (error?: LazarusError) => {
      stopped = true;
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      dispose();
      void ws.dispose();
      if (error) reject(error);
      else resolve();
    };
    const stop = () => end();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const subscribe = (delay: number) => {
      if (stopped) return;
      dispose = ws.subscribe<{ deadLetterChanged: { cursor: string; isNew: boolean; deleted: boolean; deadLetterId: string; deadLetter: Row | null } }>(
        { query: `subscription ($filter: DeadLetterFilter, $after: String) { deadLetterChanged(filter: $filter, after: $after) { cursor isNew deleted deadLetterId deadLetter { ${ROW} } } }`, variables: { filter, after: cursor } },
        {
          next: ({ data, errors }) => {
            if (errors?.length) return end(new LazarusError(String(errors[0]!.extensions?.code ?? 'ERROR'), errors[0]!.message));
            const c = data!.deadLetterChanged;
            cursor = c.cursor;
            delay = 500;
            out(g.json ? `${JSON.stringify(c)}\n` : `${c.deleted ? 'deleted ' : c.isNew ? 'new     ' : 'changed '} ${c.deadLetter ? line(c.deadLetter) : c.deadLetterId}\n`);
          },
          error: (error) => {
            if (stopped) return;
            if (Array.isArray(error)) return end(new LazarusError(String(error[0]?.extensions?.code ?? 'ERROR'), error[0]?.message ?? 'refused'));
            const code = (error as CloseEvent)?.code;
            if (code === 4401 || code === 4403) return end(new LazarusError('UNAUTHENTICATED', 'the service refused the API key'));
            if (!hasConnected && ++failedFirstConnects >= TAIL_FIRST_CONNECT_ATTEMPTS) {
              return end(new LazarusError('UNAVAILABLE', `cannot connect to ${wsUrl} (${failedFirstConnects} attempts, last: ${describe(error)})`));
            }
            process.stderr.write(`lazarus: ${hasConnected ? 'connection lost' : 'cannot connect'}; ${hasConnected ? 'resuming' : 'trying again'}${cursor ? ` after ${cursor}` : ''} in ${delay} ms\n`);
            setTimeout(() => subscribe(Math.min(delay * 2, 5_000)), delay);
          },
          complete: () => setTimeout(() => subscribe(delay), delay),
        },
      );
    };
    subscribe(500);
  });
}

/** A WebSocket failure in a few words. Node's ErrorEvent carries no message (refused, unknown host alike). */
function describe(error: unknown): string {
  const e = error as { message?: string; code?: number; reason?: string } | null;
  if (typeof e?.code === 'number') return `closed with ${e.code}${e.reason ? ` ${e.reason}` : ''}`;
  return e?.message || 'the connection failed';
}

/** Runs the CLI; resolves with the exit code. */
export async function run(argv: string[], out: (text: string) => void = (s) => void process.stdout.write(s)): Promise<number> {
  const program = buildProgram(out);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') return EXIT.ok;
      if (error.code === 'lazarus.usage') process.stderr.write(`${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof LazarusError) {
      process.stderr.write(`lazarus: ${error.code}: ${error.message}${error.field ? ` (field ${error.field})` : ''}\n`);
      if (error.code === 'UNAUTHENTICATED' || error.code === 'FORBIDDEN' || error.code === 'HTTP_401' || error.code === 'HTTP_403') return EXIT.auth;
      if (error.code === 'UNAVAILABLE') return EXIT.unreachable;
      return EXIT.refused;
    }
    process.stderr.write(`lazarus: ${(error as Error).message}\n`);
    return EXIT.refused;
  }
}
