/**
 * The arrows allowed between Faucet's parts (docs/architecture.md): workers → shared → schema; no
 * worker imports another; the SDK and the bridge import from the workers only the shared wire
 * contract; the schema imports no code of ours. Read from the import statements of every tracked
 * TypeScript file, so a new file is checked the moment it exists.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const workers = ['api', 'gateway', 'metrics', 'console'];

function sourceFiles(): string[] {
  return execFileSync('git', ['ls-files', '-co', '--exclude-standard', '*.ts', '*.tsx', '*.mts'], { cwd: root, encoding: 'utf8' })
    .split('\n')
    .filter((file) => file !== '' && !file.includes('node_modules/') && existsSync(join(root, file)));
}

/** Repo-relative targets of a file's relative and `#shared/` imports (and re-exports, and dynamic imports). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(root, file), 'utf8');
  const targets: string[] = [];
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]((?:\.{1,2}|#shared)\/[^'"]+)['"]/g)) {
    const specifier = match[1]!;
    const path = specifier.startsWith('#shared/')
      ? join('workers/shared', specifier.slice('#shared/'.length))
      : join(dirname(file), specifier);
    targets.push(relative(root, normalize(join(root, path))));
  }
  return targets;
}

/** Which part a path belongs to, for the rules below. */
function partOf(path: string): string {
  const [top, second] = path.split('/');
  if (top === 'workers') {
    if (second === 'shared') return path.startsWith('workers/shared/wire/') ? 'wire' : 'shared';
    if (second === 'test') return 'workers-test-support';
    return workers.includes(second!) ? `worker:${second}` : `workers:${second}`;
  }
  if (top === 'drizzle') return path === 'drizzle/schema.ts' ? 'schema' : 'drizzle';
  return top!;
}

function violation(from: string, to: string): string | null {
  const source = partOf(from);
  const target = partOf(to);
  if (source === target) return null;
  if (source === 'schema') return 'the schema imports nothing of ours';
  if ((source === 'shared' || source === 'wire') && target.startsWith('worker:')) return 'workers/shared imports a worker';
  if (source === 'wire' && target === 'shared') return 'the wire contract imports shared code beyond itself';
  if (source.startsWith('worker:') && target.startsWith('worker:')) return 'a worker imports another worker';
  if (
    (source === 'sdk' || source === 'bridge') &&
    (target === 'shared' || target.startsWith('worker:') || target === 'workers-test-support' || target === 'schema')
  ) {
    return `${source} imports worker code other than the shared wire contract`;
  }
  return null;
}

describe('dependency rules', () => {
  it('every import follows the allowed arrows', () => {
    const found: string[] = [];
    for (const file of sourceFiles()) {
      for (const target of importsOf(file)) {
        const reason = violation(file, target);
        if (reason !== null) found.push(`${file} → ${target}: ${reason}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('catches each kind of violation (the check itself can fail)', () => {
    expect(violation('workers/shared/ledger/x.ts', 'workers/gateway/src/y.ts')).not.toBeNull();
    expect(violation('workers/api/src/x.ts', 'workers/gateway/src/y.ts')).not.toBeNull();
    expect(violation('sdk/src/x.ts', 'workers/shared/money/index.ts')).not.toBeNull();
    expect(violation('bridge/src/x.ts', 'workers/gateway/src/y.ts')).not.toBeNull();
    expect(violation('drizzle/schema.ts', 'workers/shared/money/index.ts')).not.toBeNull();
    expect(violation('sdk/src/x.ts', 'workers/shared/wire/route-modes.ts')).toBeNull();
    expect(violation('workers/gateway/src/x.ts', 'workers/shared/money/index.ts')).toBeNull();
  });
});
