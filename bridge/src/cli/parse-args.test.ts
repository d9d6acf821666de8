import { describe, expect, it } from 'vitest';
import { defaultPort, parseCli } from './parse-args';

const start = (argv: string[], env: NodeJS.ProcessEnv = { HOME: '/home/user' }) => {
  const command = parseCli(argv, env);
  if (command.kind !== 'start') throw new Error(`expected start, got ${JSON.stringify(command)}`);
  return command.options;
};

describe('faucet-bridge command line', () => {
  it('starts on 127.0.0.1 and the default port with autodetection and no origins', () => {
    const options = start(['start'], { XDG_STATE_HOME: '/state' });
    expect(options).toMatchObject({
      port: defaultPort,
      host: '127.0.0.1',
      allowNonLoopback: false,
      upstream: undefined,
      allowedOrigins: [],
    });
    expect(options.outboxDirectory).toBe('/state/faucet-bridge/outbox');
  });

  it('reads every flag', () => {
    const options = start([
      'start',
      '--port',
      '9000',
      '--host',
      '0.0.0.0',
      '--allow-non-loopback',
      '--upstream',
      'http://127.0.0.1:1234/v1',
      '--api-base-url',
      'https://api.example.com',
      '--allow-origin',
      'https://a.example',
      '--allow-origin',
      'http://localhost:5173',
      '--outbox-dir',
      '/tmp/outbox',
    ]);
    expect(options).toMatchObject({
      port: 9000,
      host: '0.0.0.0',
      allowNonLoopback: true,
      upstream: { url: 'http://127.0.0.1:1234', kind: 'lmstudio' },
      apiBaseUrl: 'https://api.example.com',
      allowedOrigins: ['https://a.example', 'http://localhost:5173'],
      outboxDirectory: '/tmp/outbox',
    });
  });

  it('takes the upstream, origins, control API and upstream key from the environment', () => {
    const options = start(['start'], {
      FAUCET_BRIDGE_UPSTREAM: 'http://127.0.0.1:8080',
      FAUCET_BRIDGE_ALLOWED_ORIGINS: 'https://a.example, https://b.example',
      FAUCET_API_BASE_URL: 'http://127.0.0.1:8787',
      FAUCET_BRIDGE_UPSTREAM_API_KEY: 'sk-local',
      HOME: '/home/user',
    });
    expect(options.upstream).toEqual({ url: 'http://127.0.0.1:8080', kind: 'llamacpp' });
    expect(options.allowedOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(options.apiBaseUrl).toBe('http://127.0.0.1:8787');
    expect(options.upstreamApiKey).toBe('sk-local');
  });

  it('names the upstream kind by port, or as given', () => {
    expect(start(['start', '--upstream', 'http://127.0.0.1:11434']).upstream?.kind).toBe('ollama');
    expect(start(['start', '--upstream', 'http://10.0.0.5:9999']).upstream?.kind).toBe('openai_compatible');
    expect(start(['start', '--upstream', 'http://10.0.0.5:9999', '--upstream-kind', 'llamacpp']).upstream?.kind).toBe('llamacpp');
  });

  it.each([
    [['start', '--allow-origin', '*'], /"\*" is not allowed/],
    [['start', '--port', 'eighty'], /--port/],
    [['start', '--port', '70000'], /--port/],
    [['start', '--upstream', 'ftp://x'], /http/],
    [['start', '--upstream', 'http://user:key@127.0.0.1:1234'], /credentials/],
    [['start', '--upstream-kind', 'vllm'], /--upstream-kind/],
    [['start', '--bogus'], /bogus/],
    [['stop'], /Unknown command/],
  ])('refuses %j', (argv, message) => {
    const command = parseCli(argv, {});
    expect(command.kind).toBe('error');
    expect(command.kind === 'error' && command.message).toMatch(message);
  });

  it('shows help for --help, help and no command; the version for --version', () => {
    expect(parseCli(['--help'], {}).kind).toBe('help');
    expect(parseCli(['help'], {}).kind).toBe('help');
    expect(parseCli([], {}).kind).toBe('help');
    expect(parseCli(['--version'], {}).kind).toBe('version');
  });
});
