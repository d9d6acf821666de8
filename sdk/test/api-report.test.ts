import { describe, expect, it } from 'vitest';
import { type ApiEntry, checkApiReport, parseSnapshot, snapshotText } from '../scripts/api-report.ts';

const types: Record<ApiEntry, string> = {
  index: 'export declare function createFaucet(options: FaucetOptions): FaucetClient;\n',
  react: 'export declare function FaucetChat(props: FaucetChatProps): JSX.Element;\n',
  ai: 'export declare function createFaucetProvider(settings: FaucetProviderSettings): FaucetAiProvider;\n',
};
const reportAt = (version: string) =>
  Object.fromEntries((Object.keys(types) as ApiEntry[]).map((entry) => [entry, snapshotText(entry, version, types[entry])])) as Record<
    ApiEntry,
    string
  >;
const changelog = '# Changelog\n\n## 0.3.0\n\n## 0.2.1\n\n## 0.2.0\n';
const withNewOptionalField = {
  ...types,
  index: types.index.replace('options: FaucetOptions', 'options: FaucetOptions & { tag?: string }'),
};

describe('API report check', () => {
  it('passes when the built types are the report, at its version or a later patch', () => {
    expect(checkApiReport({ packageVersion: '0.2.0', built: types, snapshots: reportAt('0.2.0'), changelog })).toEqual([]);
    expect(checkApiReport({ packageVersion: '0.2.1', built: types, snapshots: reportAt('0.2.0'), changelog })).toEqual([]);
  });

  it('fails when an exported type changed without a version bump, or with only a patch bump', () => {
    for (const packageVersion of ['0.2.0', '0.2.1']) {
      const problems = checkApiReport({ packageVersion, built: withNewOptionalField, snapshots: reportAt('0.2.0'), changelog });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^index: exported types changed without a version bump/);
    }
  });

  it('asks for the report to be recorded when the minor was bumped but sdk/api not updated', () => {
    const problems = checkApiReport({ packageVersion: '0.3.0', built: withNewOptionalField, snapshots: reportAt('0.2.0'), changelog });
    expect(problems).toEqual([expect.stringMatching(/^index: exported types changed for 0\.3\.0; record them/)]);
  });

  it('fails without a changelog section for the version, or with a version older than the report', () => {
    expect(checkApiReport({ packageVersion: '0.2.2', built: types, snapshots: reportAt('0.2.0'), changelog })).toEqual([
      'sdk/CHANGELOG.md has no "## 0.2.2" section for the package\'s version',
    ]);
    expect(checkApiReport({ packageVersion: '0.2.0', built: types, snapshots: reportAt('0.3.0'), changelog })).toHaveLength(3);
  });

  it('reads back the version and the declarations it wrote', () => {
    expect(parseSnapshot(snapshotText('ai', '1.4.2', types.ai))).toEqual({
      version: { major: 1, minor: 4, patch: 2 },
      declarations: types.ai,
    });
    expect(() => parseSnapshot(types.ai)).toThrow(/header/);
  });
});
