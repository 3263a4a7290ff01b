import { suiteConfig } from './vitest.shared.ts';

export default suiteConfig({
  include: ['test/**/*.test.ts'],
  exclude: ['test/faults/**', '**/node_modules/**'],
  // Files wait on PostgreSQL, brokers, child processes and Chromium more than they compute, so two
  // files at a time even where vitest's default (cores - 1) runs one. Not more: CI runs two suites
  // and the bench smoke side by side on 2 cores, and at a load of ~30 a bare `node src/main.ts`
  // took 45 s to start. Every file has its own database, vhost, stream or key.
  maxWorkers: 2,
});
