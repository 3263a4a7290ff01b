import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { Config } from './config.ts';

export type { Logger };

/**
 * JSON lines in production; one readable line per entry in development. Both write synchronously,
 * so the last line before a fatal exit is never lost. Payloads are never logged.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logFormat'>): Logger {
  const options = { name: 'lazarus', level: config.logLevel };
  if (config.logFormat === 'json') return pino(options);
  return pino(options, pretty({ sync: true, colorize: process.stdout.isTTY, ignore: 'pid,hostname,name', singleLine: true }));
}
