import { suiteConfig } from './vitest.shared.ts';

export default suiteConfig({ include: ['test/**/*.test.ts'], exclude: ['test/faults/**', '**/node_modules/**'] });
