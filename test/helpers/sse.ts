// Reads a GraphQL subscription over SSE (Yoga's `event: next` / `event: complete` messages).
export interface SseMessage<T = Record<string, unknown>> {
  data?: T | null;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

export interface SseSubscription<T> {
  status: number;
  /** The next message; rejects when the stream ends or `timeoutMs` passes first. */
  next(timeoutMs?: number): Promise<SseMessage<T>>;
  /** Reads until `n` messages have arrived. */
  take(n: number, timeoutMs?: number): Promise<SseMessage<T>[]>;
  close(): void;
}

export async function subscribeSse<T = Record<string, unknown>>(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  headers: Record<string, string> = {},
  fetchImpl: (url: string, init: RequestInit) => Promise<Response> = fetch,
): Promise<SseSubscription<T>> {
  const controller = new AbortController();
  const response = await fetchImpl(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...headers },
    body: JSON.stringify({ query, variables }),
    signal: controller.signal,
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const messages: SseMessage<T>[] = [];
  let buffer = '';
  let ended = false;

  const pump = async (): Promise<void> => {
    const { value, done } = await reader.read();
    if (done) {
      ended = true;
      return;
    }
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event:'))?.slice(6).trim();
      const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (event === 'complete') ended = true;
      else if (data) messages.push(JSON.parse(data) as SseMessage<T>);
    }
  };

  const next = async (timeoutMs = 30_000): Promise<SseMessage<T>> => {
    const deadline = Date.now() + timeoutMs;
    while (messages.length === 0) {
      if (ended) throw new Error('the SSE stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no SSE message within ${timeoutMs} ms`);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pump(), new Promise((resolve) => (timer = setTimeout(resolve, left)))]);
      clearTimeout(timer);
    }
    return messages.shift()!;
  };

  return {
    status: response.status,
    next,
    async take(n, timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      const out: SseMessage<T>[] = [];
      while (out.length < n) out.push(await next(Math.max(1, deadline - Date.now())));
      return out;
    },
    close() {
      controller.abort();
      void reader.cancel().catch(() => {});
    },
  };
}
