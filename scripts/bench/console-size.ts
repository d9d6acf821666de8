/**
 * The console's first-view JavaScript (under 150 kB minified + gzipped): builds
 * workers/console as deployed (Vite, minified) into a temporary folder and sums the gzipped size
 * of the scripts index.html loads before the first view renders — the entry module and the chunks it
 * preloads; views loaded on demand are counted apart.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { buildConsole } from '../lib/console-build.ts';

export interface ConsoleSize {
  firstViewMinBytes: number;
  firstViewGzipBytes: number;
  /** Every other script of the build (views loaded on demand), gzipped. */
  onDemandGzipBytes: number;
  targetGzipBytes: number;
}

/** Paths of the scripts index.html loads up front: `<script type="module" src>` and `<link rel="modulepreload" href>`. */
export function firstViewScripts(html: string): string[] {
  const scripts = [...html.matchAll(/<script[^>]*type="module"[^>]*src="([^"]+)"/g)].map((match) => match[1]!);
  const preloads = [...html.matchAll(/<link[^>]*rel="modulepreload"[^>]*href="([^"]+)"/g)].map((match) => match[1]!);
  return [...new Set([...scripts, ...preloads])];
}

export async function measureConsoleSize(): Promise<ConsoleSize> {
  const outDir = mkdtempSync(join(tmpdir(), 'faucet-console-size-'));
  try {
    await buildConsole(outDir);
    const client = join(outDir, 'client');
    const first = new Set(firstViewScripts(readFileSync(join(client, 'index.html'), 'utf8')).map((path) => path.replace(/^\//, '')));
    if (first.size === 0) throw new Error('no module script in the built index.html');
    const gzip = (path: string) => gzipSync(readFileSync(join(client, path)), { level: 9 }).length;
    const scripts = readdirSync(join(client, 'assets'))
      .filter((name) => name.endsWith('.js'))
      .map((name) => `assets/${name}`);
    const firstView = scripts.filter((path) => first.has(path));
    return {
      firstViewMinBytes: firstView.reduce((sum, path) => sum + readFileSync(join(client, path)).length, 0),
      firstViewGzipBytes: firstView.reduce((sum, path) => sum + gzip(path), 0),
      onDemandGzipBytes: scripts.filter((path) => !first.has(path)).reduce((sum, path) => sum + gzip(path), 0),
      targetGzipBytes: 150_000,
    };
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}
