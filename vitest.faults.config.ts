import { suiteConfig } from './vitest.shared.ts';

// `npm run test:faults`: real processes, real PostgreSQL stops and restarts. Files run one at a
// time: they stop and start servers and measure recovery, which parallel runs would disturb.
export default suiteConfig({
  include: ['test/faults/**/*.fault.test.ts'],
  fileParallelism: false,
  testTimeout: 120_000,
});
