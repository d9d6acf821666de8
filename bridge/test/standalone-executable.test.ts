import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildSea } from '../scripts/build-sea';
import { rawRequest } from './support/http-request';
import { freePort } from './support/listen';

/**
 * Opt-in (FAUCET_BRIDGE_TEST_SEA=1): the build copies the ~120 MB node binary and fetches
 * postject from the npm registry, which the default suite must not depend on.
 */
describe.runIf(process.env.FAUCET_BRIDGE_TEST_SEA === '1')('the standalone (SEA) executable', () => {
  it('runs without a separate node and answers /health', { timeout: 180_000 }, async () => {
    const directory = await mkdtemp(join(tmpdir(), 'faucet-bridge-sea-'));
    onTestFinished(() => rm(directory, { recursive: true, force: true }));
    const executable = await buildSea(directory);
    const port = await freePort();
    const child = spawn(executable, ['start', '--port', String(port)], {
      env: { PATH: '/nonexistent', XDG_STATE_HOME: join(directory, 'state') },
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('listening on') && resolve());
      child.once('exit', (code) => reject(new Error(`exited with ${code}`)));
    });
    expect((await rawRequest(port, { path: '/health' })).json()).toMatchObject({ status: 'ok' });
    child.kill('SIGTERM');
    expect(await new Promise((resolve) => child.once('exit', resolve))).toBe(0);
  });
});
