/**
 * Builds the console: the React app into dist/client and the Worker (src/worker.ts) with its
 * wrangler.json into dist/faucet_console, through @cloudflare/vite-plugin.
 */
import { cloudflare } from '@cloudflare/vite-plugin';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react(), cloudflare({ configPath: './wrangler.jsonc' })],
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  logLevel: 'warn',
});
