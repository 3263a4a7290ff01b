import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createOutageLog } from '../src/db/outageLog.ts';

const LEVELS: Record<number, string> = { 30: 'info', 40: 'warn', 50: 'error' };

function capture() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const logger = pino({ level: 'info' }, {
    write: (line: string) => {
      const { level, msg, ...fields } = JSON.parse(line) as { level: number; msg: string };
      lines.push({ level: LEVELS[level]!, msg, fields });
    },
  });
  return { lines, logger };
}
const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:54329'), { code: 'ECONNREFUSED' });

describe('the outage log', () => {
  it('logs an outage once when it starts and once when the database answers, however many loops fail meanwhile', () => {
    const { lines, logger } = capture();
    const outage = createOutageLog(logger);

    for (let i = 0; i < 100; i++) outage.failed(refused, i % 2 ? 'retry pass failed' : 'change feed read failed');
    outage.answered();
    outage.answered();

    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'the database is unreachable (change feed read failed); retrying quietly until it answers'],
      ['info', 'the database answers again'],
    ]);
    expect(lines[1]!.fields.failuresNotLogged).toBe(99);
  });

  it('logs every error that is not the database being unreachable', () => {
    const { lines, logger } = capture();
    const outage = createOutageLog(logger);

    outage.failed(refused, 'retry pass failed');
    outage.failed(new Error('trigger rejected the update'), 'redrive batch failed');
    outage.failed(new Error('trigger rejected the update'), 'redrive batch failed');

    expect(lines.map((l) => l.level)).toEqual(['warn', 'error', 'error']);
  });

  it('logs a second outage after the database came back', () => {
    const { lines, logger } = capture();
    const outage = createOutageLog(logger);

    outage.failed(refused, 'a');
    outage.answered();
    outage.failed(refused, 'b');

    expect(lines.map((l) => l.level)).toEqual(['warn', 'info', 'warn']);
  });
});
