// A worker thread holding some of the benchmark's SSE subscribers, so parsing their streams does
// not delay the main thread's clocks. Times are epoch milliseconds (timeOrigin + now). Arrivals
// are kept per subscriber in a Float64Array indexed by id − baseId (NaN: not seen): 200
// subscribers × 30,000 events as Map entries made the benchmark's own garbage collection part of
// what it measured.
import { parentPort, workerData } from 'node:worker_threads';

const { url, count, query, capacity } = workerData as { url: string; count: number; query: string; capacity: number };
let baseId = 0;
const arrivals = Array.from({ length: count }, () => new Float64Array(capacity).fill(NaN));
const seen = new Array<number>(count).fill(0);
const controllers: AbortController[] = [];
let tooSlow = 0;

async function open(index: number): Promise<void> {
  const controller = new AbortController();
  controllers.push(controller);
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query }),
    signal: controller.signal,
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const times = arrivals[index]!;
  void (async () => {
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      const at = performance.timeOrigin + performance.now();
      buffer += value;
      let start = 0;
      let end: number;
      while ((end = buffer.indexOf('\n\n', start)) >= 0) {
        const block = buffer.slice(start, end);
        start = end + 2;
        if (block.includes('SUBSCRIBER_TOO_SLOW')) tooSlow += 1;
        const m = /"id":"(\d+)"/.exec(block);
        if (!m) continue;
        const slot = Number(m[1]) - baseId;
        if (slot >= 0 && slot < capacity && Number.isNaN(times[slot]!)) times[slot] = at;
        seen[index]! += 1;
      }
      buffer = buffer.slice(start);
    }
  })();
}

await Promise.all(arrivals.map((_, i) => open(i)));
parentPort!.postMessage({ type: 'ready' });
parentPort!.on('message', (message: { type: string; baseId?: number }) => {
  if (message.type === 'counts') parentPort!.postMessage({ type: 'counts', counts: seen });
  if (message.type === 'clear') {
    baseId = message.baseId!;
    for (const times of arrivals) times.fill(NaN);
    seen.fill(0);
  }
  if (message.type === 'stop') {
    for (const c of controllers) c.abort();
    parentPort!.postMessage({ type: 'arrivals', arrivals, tooSlow }, arrivals.map((a) => a.buffer));
  }
});
