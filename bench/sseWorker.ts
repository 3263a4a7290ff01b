// A worker thread holding some of the benchmark's SSE subscribers, so parsing their streams does
// not delay the main thread's clocks. Times are epoch milliseconds (timeOrigin + now). Arrivals
// are kept per subscriber in a Float64Array indexed by id − baseId (NaN: not seen): 200
// subscribers × 30,000 events as Map entries made the benchmark's own garbage collection part of
// what it measured.
import http from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';

const { url, count, query, capacity } = workerData as { url: string; count: number; query: string; capacity: number };
let baseId = 0;
const arrivals = Array.from({ length: count }, () => new Float64Array(capacity).fill(NaN));
const seen = new Array<number>(count).fill(0);
const requests: http.ClientRequest[] = [];
let stopping = false;
let tooSlow = 0;

// node:http and a byte scan rather than fetch and a text decoder: the 200 clients share two
// cores with the service and PostgreSQL, and the heavier client cost the service its CPU.
const ID = Buffer.from('"id":"');
const BLOCK_END = Buffer.from('\n\n');
const TOO_SLOW = Buffer.from('SUBSCRIBER_TOO_SLOW');

function open(index: number): Promise<void> {
  const times = arrivals[index]!;
  const body = JSON.stringify({ query });
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
    }, (res) => {
      let rest: Buffer = Buffer.alloc(0);
      res.on('data', (chunk: Buffer) => {
        const at = performance.timeOrigin + performance.now();
        const buffer = rest.length ? Buffer.concat([rest, chunk]) : chunk;
        let start = 0;
        let end: number;
        while ((end = buffer.indexOf(BLOCK_END, start)) >= 0) {
          const block = buffer.subarray(start, end);
          start = end + 2;
          if (block.indexOf(TOO_SLOW) >= 0) tooSlow += 1;
          const at0 = block.indexOf(ID);
          if (at0 < 0) continue;
          let id = 0;
          for (let i = at0 + ID.length; i < block.length && block[i]! >= 48 && block[i]! <= 57; i++) id = id * 10 + block[i]! - 48;
          const slot = id - baseId;
          if (slot >= 0 && slot < capacity && Number.isNaN(times[slot]!)) times[slot] = at;
          seen[index]! += 1;
        }
        rest = buffer.subarray(start);
      });
      res.on('error', () => {});
      resolve();
    });
    requests.push(req);
    req.on('error', (error) => (stopping ? undefined : reject(error)));
    req.end(body);
  });
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
    stopping = true;
    for (const r of requests) r.destroy();
    parentPort!.postMessage({ type: 'arrivals', arrivals, tooSlow }, arrivals.map((a) => a.buffer));
  }
});
