// `lazarus`: the console's concepts from a terminal, over the typed client. Reads LAZARUS_URL and
// LAZARUS_API_KEY. Exit codes: 0 done, 1 the API refused (validation, not found, conflict),
// 2 usage, 3 the key is missing, wrong or lacks the role, 4 the service cannot be reached.
import { Command, CommanderError, Option } from 'commander';
import { createClient } from 'graphql-ws';
import { LazarusClient, LazarusError } from '../client/lazarusClient.ts';

export const EXIT = { ok: 0, refused: 1, usage: 2, auth: 3, unreachable: 4 } as const;

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
  payloadContains?: string;
  since?: string;
  until?: string;
  ids?: string;
}

const list = (value: string | undefined) => value?.split(',').map((s) => s.trim()).filter(Boolean);

/** The DeadLetterFilter the options describe (only what was given). */
export function filterOf(o: FilterOptions): Record<string, unknown> {
  const f: Record<string, unknown> = {
    statuses: list(o.status?.toUpperCase()),
    eventTypes: list(o.type),
    queues: list(o.queue),
    sources: list(o.source),
    errorKinds: list(o.kind?.toUpperCase()),
    errorText: o.errorText,
    errorSignatures: o.signature ? [o.signature] : undefined,
    orderingKey: o.key,
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
    .option('--payload-contains <json>', 'JSON the payload must contain')
    .option('--since <time>', 'created at or after (ISO time)')
    .option('--until <time>', 'created before (ISO time)');
}

const ROW = 'id status eventType queue source attempts createdAt nextAttemptAt error { kind message }';
type Row = { id: string; status: string; eventType: string; queue: string; source: string; attempts: number; createdAt: string; nextAttemptAt: string | null; error: { kind: string; message: string } };

function line(r: Row): string {
  return [r.id.padStart(8), r.status.padEnd(10), r.eventType.padEnd(20), r.queue.padEnd(10), String(r.attempts).padStart(3), r.createdAt, `${r.error.kind}: ${r.error.message}`].join('  ');
}

export function buildProgram(out: (text: string) => void): Command {
  const program = new Command('lazarus')
    .description('Find, inspect, retry and watch dead letters in a Lazarus service.')
    .addOption(new Option('--url <url>', 'GraphQL endpoint').env('LAZARUS_URL').default('http://127.0.0.1:4000/graphql'))
    .addOption(new Option('--api-key <key>', 'API key, sent as Authorization: Bearer').env('LAZARUS_API_KEY'))
    .option('--json', 'machine-readable output (JSON; tail prints one JSON object per line)')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: (s) => process.stderr.write(s) });
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
      print({ count, exact, rows }, () => [...rows.map(line), `${rows.length} shown of ${count}${exact ? '' : '+'} matching`].join('\n'));
    });

  program
    .command('show <id>')
    .description('one dead letter: payload, error, timeline')
    .action(async (id: string) => {
      const data = await client().request<{ deadLetter: (Row & { payload: unknown; headers: unknown; orderingKey: string | null; error: { stack: string | null }; timeline: { at: string; action: { action: string; actor: string; reason: string | null } | null; attempt: { attemptNumber: number; outcome: string; statusCode: number | null; errorMessage: string | null } | null }[] }) | null }>(
        `query ($id: ID!) { deadLetter(id: $id) { ${ROW} orderingKey payload headers error { stack } timeline { at action { action actor reason } attempt { attemptNumber outcome statusCode errorMessage } } } }`,
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
          ...d.timeline.map((e) => `  ${e.at}  ${e.action ? `${e.action.action} by ${e.action.actor}${e.action.reason ? ` (${e.action.reason})` : ''}` : `attempt ${e.attempt!.attemptNumber} ${e.attempt!.outcome}${e.attempt!.statusCode ? ` HTTP ${e.attempt!.statusCode}` : ''}${e.attempt!.errorMessage ? `: ${e.attempt!.errorMessage}` : ''}`}`),
        ].join('\n'),
      );
    });

  for (const [name, mutation, input, result] of [
    ['requeue', 'requeueDeadLetters', 'RequeueDeadLettersInput', '... on RequeueResult { count dryRun ids redrive { id status total } }'],
    ['resolve', 'resolveDeadLetters', 'ResolveDeadLettersInput', '... on BulkChange { count dryRun ids }'],
    ['discard', 'discardDeadLetters', 'DiscardDeadLettersInput', '... on BulkChange { count dryRun ids }'],
  ] as const) {
    const command = withFilters(program.command(name).description(`${name} every dead letter matching the filters (or --ids)`))
      .option('--ids <list>', 'explicit ids instead of a filter')
      .option('--dry-run', 'report what would change; write nothing')
      .option('--yes', 'really do it')
      .option('--reason <text>', name === 'requeue' ? 'why' : 'why (required)');
    if (name === 'requeue') command.option('--rate <perSecond>', 'as a throttled redrive at this rate').option('--force', 'also requeue finished events').option('--reset-attempts', 'start attempts from zero');
    command.action(async (o: FilterOptions & { dryRun?: boolean; yes?: boolean; reason?: string; rate?: string; force?: boolean; resetAttempts?: boolean }) => {
      if (!o.dryRun && !o.yes) throw new CommanderError(EXIT.usage, 'lazarus.confirm', `error: ${name} changes events: add --dry-run to see how many, or --yes to do it`);
      const ids = list(o.ids);
      const args: Record<string, unknown> = ids ? { ids } : { filter: filterOf(o) };
      args.dryRun = Boolean(o.dryRun);
      if (o.reason !== undefined) args.reason = o.reason;
      if (name === 'requeue') Object.assign(args, { ratePerSecond: o.rate ? Number(o.rate) : undefined, force: o.force, resetAttempts: o.resetAttempts });
      const data = await client().request<Record<string, { __typename: string; count?: number; dryRun?: boolean; ids?: string[]; redrive?: { id: string; status: string; total: number } | null; code?: string; message?: string }>>(
        `mutation ($input: ${input}!) { ${mutation}(input: $input) { __typename ${result} ... on MutationError { code message } } }`,
        { input: args },
      );
      const r = data[mutation]!;
      if (r.code) throw new LazarusError(r.code, r.message ?? r.__typename);
      print(r, () =>
        r.redrive
          ? `redrive ${r.redrive.id} ${r.redrive.status}: ${r.redrive.total} events to requeue at its rate (lazarus redrives)`
          : `${r.dryRun ? 'would ' : ''}${name} ${r.count} dead letter${r.count === 1 ? '' : 's'}${r.ids?.length ? `: ${r.ids.slice(0, 20).join(', ')}${r.count! > 20 ? ', …' : ''}` : ''}`,
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
        { statuses: list(o.status?.toUpperCase()) ?? null },
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

/** Streams deadLetterChanged; after a dropped connection it resubscribes from the last cursor. */
function tail(g: Globals, filter: Record<string, unknown>, after: string | null, out: (text: string) => void): Promise<void> {
  const wsUrl = g.url.replace(/^http/, 'ws');
  const ws = createClient({ url: wsUrl, connectionParams: g.apiKey ? { authorization: `Bearer ${g.apiKey}` } : {}, retryAttempts: 0, lazy: true });
  let cursor = after;
  return new Promise<void>((resolve, reject) => {
    let dispose = () => {};
    let stopped = false;
    const stop = () => {
      stopped = true;
      dispose();
      void ws.dispose();
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    const subscribe = (delay: number) => {
      if (stopped) return;
      dispose = ws.subscribe<{ deadLetterChanged: { cursor: string; isNew: boolean; deleted: boolean; deadLetterId: string; deadLetter: Row | null } }>(
        { query: `subscription ($filter: DeadLetterFilter, $after: String) { deadLetterChanged(filter: $filter, after: $after) { cursor isNew deleted deadLetterId deadLetter { ${ROW} } } }`, variables: { filter, after: cursor } },
        {
          next: ({ data, errors }) => {
            if (errors?.length) return reject(new LazarusError(String(errors[0]!.extensions?.code ?? 'ERROR'), errors[0]!.message));
            const c = data!.deadLetterChanged;
            cursor = c.cursor;
            delay = 500;
            out(g.json ? `${JSON.stringify(c)}\n` : `${c.deleted ? 'deleted ' : c.isNew ? 'new     ' : 'changed '} ${c.deadLetter ? line(c.deadLetter) : c.deadLetterId}\n`);
          },
          error: (error) => {
            if (stopped) return;
            if (Array.isArray(error)) return reject(new LazarusError(String(error[0]?.extensions?.code ?? 'ERROR'), error[0]?.message ?? 'refused'));
            const code = (error as CloseEvent)?.code;
            if (code === 4401 || code === 4403) return reject(new LazarusError('UNAUTHENTICATED', 'the service refused the API key'));
            process.stderr.write(`lazarus: connection lost; resuming${cursor ? ` after ${cursor}` : ''} in ${delay} ms\n`);
            setTimeout(() => subscribe(Math.min(delay * 2, 5_000)), delay);
          },
          complete: () => setTimeout(() => subscribe(delay), delay),
        },
      );
    };
    subscribe(500);
  });
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
      if (error.code === 'lazarus.confirm') process.stderr.write(`${error.message}\n`);
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
