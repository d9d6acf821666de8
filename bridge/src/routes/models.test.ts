import { afterEach, describe, expect, it } from 'vitest';
import { fakeModels, startFakeUpstream } from '../../test/support/fake-upstream';
import { rawRequest } from '../../test/support/http-request';
import { freePort } from '../../test/support/listen';
import { startTestBridge } from '../../test/support/start-test-bridge';
import { parseUpstreamUrl } from '../upstream/upstream-kind';

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

describe('GET /models', () => {
  it("normalises the upstream's model list to { id, provider, owned_by? }", async () => {
    const upstream = await startFakeUpstream();
    const bridge = await startTestBridge({ upstream: parseUpstreamUrl(`${upstream.url}/v1/`, 'lmstudio') });
    cleanup.push(upstream.close, () => bridge.close());
    const answer = await rawRequest(bridge.port, { path: '/models' });
    expect(answer.status).toBe(200);
    expect(answer.json()).toEqual({
      object: 'list',
      data: [
        { id: fakeModels[0]!.id, provider: 'lmstudio', owned_by: 'library' },
        { id: fakeModels[1]!.id, provider: 'lmstudio' },
      ],
    });
  });

  it('detects the first local model server that answers, in order of preference', async () => {
    const upstream = await startFakeUpstream();
    const nobody = await freePort();
    const bridge = await startTestBridge({
      detectCandidates: [
        { kind: 'ollama', url: `http://127.0.0.1:${nobody}`, hint: 'Ollama' },
        { kind: 'llamacpp', url: upstream.url, hint: 'llama.cpp' },
      ],
    });
    cleanup.push(upstream.close, () => bridge.close());
    const answer = await rawRequest(bridge.port, { path: '/models' });
    expect(answer.status).toBe(200);
    expect(answer.json().data[0].provider).toBe('llamacpp');
    const diagnostics = (await rawRequest(bridge.port, { path: '/diagnostics' })).json();
    expect(diagnostics.upstream).toEqual({ url: upstream.url, kind: 'llamacpp', reachable: true });
  });

  it('names every server it looked for when none answers', async () => {
    const bridge = await startTestBridge({
      detectCandidates: [{ kind: 'ollama', url: `http://127.0.0.1:${await freePort()}`, hint: 'Ollama (`ollama serve`, port 11434)' }],
    });
    cleanup.push(() => bridge.close());
    const answer = await rawRequest(bridge.port, { path: '/models' });
    expect(answer.status).toBe(502);
    expect(answer.json().error.message).toContain('No local model server found');
    expect(answer.json().error.message).toContain('ollama serve');
  });
});
