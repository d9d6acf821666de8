/**
 * Minified + gzipped size of the built SDK's entry points (tsup, as published), as a browser app
 * would ship them after its own bundler: each entry bundled and minified by esbuild, React external.
 * The React layer is measured without the core it imports (an app that uses both ships the core
 * once), and with it. The AI provider is measured with the session code it shares with the core
 * (one chunk of the build) and without `@ai-sdk/openai-compatible`, which the app installs itself;
 * with that package and its dependencies as a second figure.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';
import { build } from 'tsup';
import { sdkBuild } from '../tsup.config.ts';

export interface SdkSize {
  coreMinGzipBytes: number;
  reactMinGzipBytes: number;
  reactWithCoreMinGzipBytes: number;
  aiMinGzipBytes: number;
  aiWithDependenciesMinGzipBytes: number;
}

const reactExternals = ['react', 'react-dom', 'react/jsx-runtime', 'react-dom/client'];

function minGzipBytes(entry: string, external: string[]): number {
  const result = buildSync({
    entryPoints: [entry],
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    external,
    // The React layer names the core `@faucet/sdk`: when bundled, the build measured next to it.
    alias: external.includes('@faucet/sdk') ? {} : { '@faucet/sdk': join(entry, '..', 'index.js') },
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const output = result.outputFiles?.[0];
  if (!output) throw new Error(`esbuild wrote nothing for ${entry}`);
  return gzipSync(output.contents, { level: 9 }).byteLength;
}

/** Builds the SDK as published (JavaScript only) into a temporary folder and measures each entry. */
export async function measureSdkSize(): Promise<SdkSize> {
  // Inside the repo (git-ignored), so that esbuild finds `@ai-sdk/openai-compatible` in node_modules.
  const tmp = join(import.meta.dirname, '..', '..', '.faucet', 'tmp');
  await mkdir(tmp, { recursive: true });
  const outDir = await mkdtemp(join(tmp, 'sdk-size-'));
  try {
    await build({ ...sdkBuild, config: false, dts: false, outDir, silent: true });
    const file = (name: string) => join(outDir, `${name}.js`);
    return {
      coreMinGzipBytes: minGzipBytes(file('index'), []),
      reactMinGzipBytes: minGzipBytes(file('react'), [...reactExternals, '@faucet/sdk']),
      reactWithCoreMinGzipBytes: minGzipBytes(file('react'), reactExternals),
      aiMinGzipBytes: minGzipBytes(file('ai'), ['@faucet/sdk', '@ai-sdk/openai-compatible']),
      aiWithDependenciesMinGzipBytes: minGzipBytes(file('ai'), ['@faucet/sdk']),
    };
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const size = await measureSdkSize();
  console.log(`SDK core:              ${size.coreMinGzipBytes} bytes min+gzip`);
  console.log(`SDK React layer:       ${size.reactMinGzipBytes} bytes min+gzip (core and React external)`);
  console.log(`React layer + core:    ${size.reactWithCoreMinGzipBytes} bytes min+gzip (React external)`);
  console.log(
    `AI SDK provider:       ${size.aiMinGzipBytes} bytes min+gzip (@ai-sdk/openai-compatible external; with the session code it shares with the core)`,
  );
  console.log(`AI provider + its deps: ${size.aiWithDependenciesMinGzipBytes} bytes min+gzip (with @ai-sdk/openai-compatible, zod)`);
}
