export type UpstreamKind = 'ollama' | 'lmstudio' | 'llamacpp' | 'openai_compatible';

export interface Upstream {
  /** Base URL without `/v1`, e.g. `http://127.0.0.1:11434`. */
  url: string;
  kind: UpstreamKind;
}

export interface DetectCandidate extends Upstream {
  /** What to tell a user who wants this server. */
  hint: string;
}

/** The local model servers the bridge looks for, in order of preference, on their default ports. */
export const defaultCandidates: DetectCandidate[] = [
  { kind: 'ollama', url: 'http://127.0.0.1:11434', hint: 'Ollama (`ollama serve`, port 11434)' },
  { kind: 'lmstudio', url: 'http://127.0.0.1:1234', hint: "LM Studio's local server (Developer tab, port 1234)" },
  { kind: 'llamacpp', url: 'http://127.0.0.1:8080', hint: 'llama.cpp (`llama-server -m model.gguf`, port 8080)' },
];

const kindByPort: Record<string, UpstreamKind> = { '11434': 'ollama', '1234': 'lmstudio', '8080': 'llamacpp' };

/** Parses `--upstream`; the kind follows the server's default port unless given. */
export function parseUpstreamUrl(value: string, kind?: UpstreamKind): Upstream {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`--upstream "${value}" is not a URL like http://127.0.0.1:11434`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('--upstream must be an http:// or https:// URL');
  if (url.username || url.password) {
    throw new Error('--upstream must not contain credentials; put an API key in FAUCET_BRIDGE_UPSTREAM_API_KEY');
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '');
  return { url: `${url.origin}${path}`, kind: kind ?? kindByPort[url.port] ?? 'openai_compatible' };
}

export function isUpstreamKind(value: string): value is UpstreamKind {
  return value === 'ollama' || value === 'lmstudio' || value === 'llamacpp' || value === 'openai_compatible';
}
