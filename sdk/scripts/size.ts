/**
 * Minified + gzipped size of the SDK's two entry points, as a browser app would ship them.
 * React itself is external; the React layer is measured without the core it imports (an app
 * that uses both ships the core once), and also with it.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { buildSync } from 'esbuild';

export interface SdkSize {
  coreMinGzipBytes: number;
  reactMinGzipBytes: number;
  reactWithCoreMinGzipBytes: number;
}

const sdkRoot = join(import.meta.dirname, '..');
const reactExternals = ['react', 'react-dom', 'react/jsx-runtime', 'react-dom/client'];

function minGzipBytes(entry: string, external: string[]): number {
  const result = buildSync({
    entryPoints: [join(sdkRoot, entry)],
    bundle: true,
    write: false,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    jsx: 'automatic',
    external,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return gzipSync(result.outputFiles[0]!.contents, { level: 9 }).byteLength;
}

export function measureSdkSize(): SdkSize {
  return {
    coreMinGzipBytes: minGzipBytes('src/index.ts', []),
    reactMinGzipBytes: minGzipBytes('react/index.ts', [...reactExternals, '@faucet/sdk']),
    reactWithCoreMinGzipBytes: minGzipBytes('react/index.ts', reactExternals),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const size = measureSdkSize();
  console.log(`SDK core:            ${size.coreMinGzipBytes} bytes min+gzip`);
  console.log(`SDK React layer:     ${size.reactMinGzipBytes} bytes min+gzip (core and React external)`);
  console.log(`React layer + core:  ${size.reactWithCoreMinGzipBytes} bytes min+gzip (React external)`);
}
