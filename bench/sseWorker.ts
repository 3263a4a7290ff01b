// A worker thread holding some of the benchmark's SSE subscribers, so parsing their streams does
// not delay the main thread's clocks. Times are epoch milliseconds (timeOrigin + now).
import { parentPort, workerData } from 'node:worker_threads';

const { url, count, query } = workerData as { url: string; count: number; query: string };
const arrivals = Array.from({ length: count }, () => new Map<string, number>());
const controllers: AbortController[] = [];
let tooSlow = 0;

async function open(map: Map<string, number>): Promise<void> {
  const controller = new AbortController();
  controllers.push(controller);
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ query }),
    signal: controller.signal,
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return;
      const at = performance.timeOrigin + performance.now();
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        if (block.includes('SUBSCRIBER_TOO_SLOW')) tooSlow += 1;
        const m = /"id":"(\d+)"/.exec(block);
        if (m && !map.has(m[1]!)) map.set(m[1]!, at);
        buffer = buffer.slice(end + 2);
      }
    }
  })();
}

await Promise.all(arrivals.map(open));
parentPort!.postMessage({ type: 'ready' });
parentPort!.on('message', (message: string) => {
  if (message === 'counts') parentPort!.postMessage({ type: 'counts', counts: arrivals.map((m) => m.size) });
  if (message === 'clear') for (const m of arrivals) m.clear();
  if (message === 'stop') {
    for (const c of controllers) c.abort();
    parentPort!.postMessage({ type: 'arrivals', arrivals: arrivals.map((m) => [...m]), tooSlow });
  }
});
