/**
 * The published build of `@faucet/sdk`: three ESM entry points (core, React layer, AI SDK provider)
 * with bundled `.d.ts` files, for browsers, Node 22 and Workers (platform-neutral: no Node
 * built-ins). Code shared by the core and the AI provider (sessions, errors) lands in one chunk,
 * so `FaucetError` is one class for both; the React layer imports the core by the package's own
 * name, so an app ships it once. React, the AI SDK provider package and `@faucet/sdk` itself stay
 * external; the wire helpers from workers/shared are bundled in.
 */
import { join } from 'node:path';
import { defineConfig, type Options } from 'tsup';

const sdkRoot = import.meta.dirname;

export const sdkBuild = {
  entry: {
    index: join(sdkRoot, 'src', 'index.ts'),
    react: join(sdkRoot, 'react', 'index.ts'),
    ai: join(sdkRoot, 'ai', 'index.ts'),
  },
  format: ['esm'],
  platform: 'neutral',
  target: 'es2022',
  dts: true,
  splitting: true,
  treeshake: true,
  clean: true,
  outDir: join(sdkRoot, 'dist'),
  // Only the SDK and the DOM/ES libs: no Workers or Node types leak into the published `.d.ts`.
  tsconfig: join(sdkRoot, 'tsconfig.build.json'),
  external: ['@faucet/sdk', 'react', 'react/jsx-runtime', '@ai-sdk/openai-compatible'],
  esbuildOptions(options) {
    options.jsx = 'automatic';
  },
} satisfies Options;

export default defineConfig(sdkBuild);
