/**
 * The release line (docs/operations.md, "Release line") is what every part says of itself: the
 * workers' versions in workers/shared/release.ts, the SDK's and the bridge's in their package.json
 * and package-lock.json entries, their changelogs and the SDK's API report, and the README's
 * summary. A version changed in one place and not the others fails here instead of drifting.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { apiEntries, parseSnapshot } from '../../sdk/scripts/api-report.ts';
import { workerVersions } from '../../workers/shared/release.ts';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

/** The section of a Markdown text under `## <title>`, up to the next `## `. */
function section(text: string, title: string): string {
  const start = text.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`no "## ${title}" section`);
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

/** The documented line: part (the table's first backticked name) → area and version. */
function documentedLine(): Map<string, { area: string; version: string }> {
  const line = new Map<string, { area: string; version: string }>();
  for (const row of section(read('docs/operations.md'), 'Release line').split('\n')) {
    const cells = row.split('|').map((cell) => cell.trim());
    const part = /^`([^`]+)`/.exec(cells[1] ?? '')?.[1];
    if (!part || !/^\d+\.\d+\.\d+$/.test(cells[3] ?? '')) continue;
    line.set(part, { area: cells[2]!, version: cells[3]! });
  }
  return line;
}

const packageVersion = (folder: string) => (JSON.parse(read(`${folder}/package.json`)) as { version: string }).version;

describe('the release line', () => {
  const line = documentedLine();
  const documented = (part: string) => {
    const entry = line.get(part);
    if (!entry) throw new Error(`docs/operations.md's release line has no row for ${part}`);
    return entry.version;
  };

  it('billing and settlement 0.7.0, operations 0.6.0, the SDK 0.6.0 (cut_reason) and the local bridge 0.5.0', () => {
    expect(Object.fromEntries(line)).toEqual({
      'workers/api': { area: 'billing and settlement', version: '0.7.0' },
      'workers/gateway': { area: 'billing and settlement', version: '0.7.0' },
      'workers/metrics': { area: 'operations', version: '0.6.0' },
      'workers/console': { area: 'operations', version: '0.6.0' },
      sdk: { area: 'SDK and local bridge', version: '0.6.0' },
      bridge: { area: 'SDK and local bridge', version: '0.5.0' },
    });
  });

  it("is what each worker answers (workers/shared/release.ts, every worker's one source)", () => {
    expect(workerVersions).toEqual({
      api: documented('workers/api'),
      gateway: documented('workers/gateway'),
      metrics: documented('workers/metrics'),
      console: documented('workers/console'),
    });
  });

  it('is the version of the SDK and the bridge: package.json, package-lock.json, changelog, API report', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, { version?: string }> };
    for (const folder of ['sdk', 'bridge']) {
      const version = documented(folder);
      expect(packageVersion(folder), `${folder}/package.json`).toBe(version);
      expect(lock.packages[folder]?.version, `package-lock.json's "${folder}" entry`).toBe(version);
      expect(read(`${folder}/CHANGELOG.md`), `${folder}/CHANGELOG.md`).toMatch(new RegExp(`^## ${version.replaceAll('.', '\\.')}$`, 'm'));
    }
    // The report may be older than a patch release, never of another minor line.
    const [major, minor] = documented('sdk').split('.').map(Number);
    for (const entry of apiEntries) {
      const { version } = parseSnapshot(read(`sdk/api/${entry}.d.ts.snap`));
      expect({ entry, major: version.major, minor: version.minor }).toEqual({ entry, major, minor });
    }
  });

  it("is the README's summary", () => {
    const summary = section(read('README.md'), 'Release line');
    const areas = new Map([...line.values()].map(({ area, version }) => [area, version]));
    for (const [area, version] of areas) {
      expect(summary, `README names ${area} at ${version}`).toMatch(
        new RegExp(`${area.split(' ')[0]}[^;]*${version.replaceAll('.', '\\.')}`, 'i'),
      );
    }
    expect(new Set(summary.match(/\d+\.\d+\.\d+/g))).toEqual(new Set(areas.values()));
  });
});
