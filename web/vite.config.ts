import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Built by scripts/buildWeb.ts into web/dist, served by the service at / (src/api/http/console.ts).
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // Editors and charts load lazily; the first screen needs none of them.
    chunkSizeWarningLimit: 600,
  },
  server: { proxy: { '/graphql': { target: 'http://127.0.0.1:4000', ws: true } } },
});
