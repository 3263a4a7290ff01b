// bench:groups, part 3: a REGRESSION alert through the real path, commit → local receiver.
// SAMPLES groups are made RESOLVED (one RESOLVED row each, folded), an alert rule for REGRESSION
// points at a local HTTP receiver, and the service runs as its own process (bench/serviceProcess.ts,
// production settings: its folder woken by the dead_letters NOTIFY hints, its alert deliverer woken by
// lazarus_alerts). Then, one group at a time, this process INSERTs a failing row with plain SQL
// in its own transaction and COMMITs; the latency runs from the COMMIT's return to the receiver's
// first request for that group:
//   commit → NOTIFY hint → folder (lazarus_fold_error_groups: RESOLVED → OPEN, lazarus_raise_alert)
//          → its commit's NOTIFY lazarus_alerts → deliverer claims → signed POST → receiver.
// Between samples it waits a random 0-GAP_MS, so commits land at every phase of the folder's and
// the deliverer's timers.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { startServiceProcess } from './serviceProcess.ts';

export interface AlertLatency {
  samples: number;
  p50Ms: number;
  p95Ms: number;
  maxMs: number;
}

const GAP_MS = 400;

export async function measureRegressionAlerts(url: string, samples: number): Promise<AlertLatency> {
  // subject → when its first request arrived (delivery is at least once; a repeat is ignored).
  const arrivals = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const at = performance.now();
      res.writeHead(200).end('ok');
      const subject = String((JSON.parse(body) as { subject?: unknown }).subject);
      if (!arrivals.has(subject)) arrivals.set(subject, at);
      waiting.get(subject)?.();
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const target = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/alerts`;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let service: Awaited<ReturnType<typeof startServiceProcess>> | null = null;
  try {
    await client.query('truncate dead_letters, dead_letter_actions, delivery_attempts, redrives, redrive_items, redrive_actions');
    await client.query('truncate alerts, alert_throttles, alert_rule_windows, alert_rules restart identity');
    // RESOLVED groups: their first (and only) event is resolved.
    await client.query(`insert into dead_letters (event_type, error_kind, error_message, fingerprint, status)
      select 'order.placed', 'DOWNSTREAM_API', 'HTTP 503', 'regress-' || i, 'RESOLVED' from generate_series(1, $1::int) i`, [samples]);
    await client.query(`insert into alert_rules (name, trigger, target_url, signing_secret, allow_private_target)
      values ('regressions', 'REGRESSION', $1, 'bench-signing-secret-0123456789', true)`, [target]);
    service = await startServiceProcess(url);
    // The service's folder creates the groups; wait until all of them are there, RESOLVED.
    for (;;) {
      const { rows } = await client.query<{ n: number }>(`select count(*)::int as n from error_groups where status = 'RESOLVED' and signature like 'regress-%'`);
      if (rows[0]!.n === samples) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const latencies: number[] = [];
    for (let i = 1; i <= samples; i++) {
      const { rows } = await client.query<{ id: string }>(`select lazarus_error_group_id('order.placed', 'DOWNSTREAM_API', $1)::text as id`, [`regress-${i}`]);
      const subject = `group:${rows[0]!.id}`;
      const arrived = new Promise<void>((resolve) => waiting.set(subject, resolve));
      await new Promise((resolve) => setTimeout(resolve, Math.random() * GAP_MS));
      await client.query('begin');
      await client.query(`insert into dead_letters (event_type, error_kind, error_message, fingerprint) values ('order.placed', 'DOWNSTREAM_API', 'HTTP 503', $1)`, [`regress-${i}`]);
      await client.query('commit');
      const committedAt = performance.now();
      const timeout = setTimeout(() => waiting.get(subject)?.(), 30_000);
      await arrived;
      clearTimeout(timeout);
      const at = arrivals.get(subject);
      if (at === undefined) throw new Error(`no REGRESSION alert for ${subject} within 30 s`);
      latencies.push(at - committedAt);
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) => Number(latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]!.toFixed(1));
    return { samples, p50Ms: at(0.5), p95Ms: at(0.95), maxMs: at(1) };
  } finally {
    await service?.stop();
    await client.end();
    receiver.closeAllConnections();
    receiver.close();
  }
}
