import { createRequire } from 'node:module';
import { defineConfig, type ViteUserConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

/** The settings every suite shares; each config file names its own test files. */
export function suiteConfig(test: NonNullable<ViteUserConfig['test']>) {
  return defineConfig({
    // Node loads graphql's CommonJS entry for dependencies (Pothos, Yoga); Vite would give our own
    // files the .mjs entry, and graphql refuses to mix the two. Pin ours to the one Node uses.
    resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
    test: {
      // Chromium first: a run that cannot get it stops before starting PostgreSQL.
      globalSetup: ['test/globalSetupChromium.ts', 'test/globalSetup.ts'],
      pool: 'forks',
      // Generous: CI runs two suites side by side on 2 cores; a test asserts outcomes, never speed.
      testTimeout: 60_000,
      hookTimeout: 120_000,
      teardownTimeout: 30_000,
      ...test,
    },
  });
}
