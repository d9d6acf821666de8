/**
 * The headers of the Messages surface: `anthropic-version` required as Anthropic requires it,
 * `anthropic-beta` through an allow-list, and the session token from `x-api-key` (the Anthropic
 * SDK's `apiKey`) or `Authorization: Bearer` (its `authToken`, and Claude Code's
 * `ANTHROPIC_AUTH_TOKEN`).
 */
import { FaucetError } from '#shared/wire/errors.ts';

/**
 * Any dated version is accepted: the request is translated to chat and the upstream gets the
 * version its adapter speaks, so the client's only shapes what it sends (Claude Code sends
 * 2023-06-01, `@anthropic-ai/sdk` 1.14 sends 2026-10-21).
 */
export function requireAnthropicVersion(headers: Headers): string {
  const version = headers.get('anthropic-version');
  if (version === null || version.trim() === '') throw new FaucetError('invalid_request', 'anthropic-version: header is required');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version.trim())) {
    throw new FaucetError(
      'invalid_request',
      `anthropic-version: "${version.slice(0, 40)}" is not a version (expected a date such as 2023-06-01)`,
    );
  }
  return version.trim();
}

/**
 * What each known beta does here. `accept`: it only permits request fields the schema polices
 * anyway, or shapes the stream or reply, or names the client, so it changes no price. Refused:
 * what changes the price or needs what the gateway does not serve. A beta not listed is refused
 * too: an unknown beta may change either.
 */
const betas: Array<{ pattern: RegExp; refused?: string }> = [
  { pattern: /^claude-code-\d{8}$/ },
  { pattern: /^oauth-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^interleaved-thinking-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^thinking-token-count-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^dev-full-thinking-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^fine-grained-tool-streaming-\d{4}-\d{2}-\d{2}$/ },
  // Built into Claude 4 models; for older ones the provider's count of output tokens is what is billed.
  { pattern: /^token-efficient-tools-\d{4}-\d{2}-\d{2}$/ },
  // Cache writes are priced by lifetime, five minutes and one hour (`extended-cache-ttl-*`, no longer needed:
  // the `ttl` is generally available and sent as the client set it, to-anthropic-request.ts).
  { pattern: /^prompt-caching-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^prompt-caching-scope-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^extended-cache-ttl-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^context-management-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^effort-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^output-128k-\d{4}-\d{2}-\d{2}$/ },
  // Tool search and programmatic calling need server tools (refused by type), tool examples and callers are
  // refused by the schema; a deferred tool (`defer_loading`) is left out of the prompt, as Anthropic leaves it.
  { pattern: /^advanced-tool-use-\d{4}-\d{2}-\d{2}$/ },
  // Only how much of the thinking is shown; it is billed as output whatever is shown (messages-request.ts).
  { pattern: /^thinking-display-updates-\d{4}-\d{2}-\d{2}$/ },
  { pattern: /^context-1m-/, refused: 'prompts beyond 200K tokens are billed at a long-context price the catalog does not have' },
  { pattern: /^fast-mode-/, refused: 'fast mode is priced differently from the catalog' },
  { pattern: /^(web-search|web-fetch|code-execution)-/, refused: "server tools run and bill on the provider's side and are not served" },
  { pattern: /^(computer-use|mcp-client)-/, refused: 'the tools it enables are not served' },
  { pattern: /^files-api-/, refused: 'files uploaded to the Files API are not reachable through the gateway' },
  { pattern: /^(message-batches|skills)-/, refused: 'it is not served by the gateway' },
];

/** The accepted betas of `anthropic-beta` (comma-separated, possibly repeated); a 400 naming the first refused one. */
export function acceptedBetas(headers: Headers): string[] {
  const names = (headers.get('anthropic-beta') ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  for (const name of names) {
    const known = betas.find((beta) => beta.pattern.test(name));
    if (known === undefined) {
      throw new FaucetError(
        'invalid_request',
        `anthropic-beta: "${name.slice(0, 80)}" is not accepted: the gateway does not know what it changes`,
      );
    }
    if (known.refused !== undefined)
      throw new FaucetError('invalid_request', `anthropic-beta: "${name}" is not accepted: ${known.refused}`);
  }
  return [...new Set(names)];
}

/**
 * The `fvs_…` session token. Both headers may carry it; when both do they must agree, so a request
 * never runs as one session while naming another.
 */
export function sessionTokenOf(headers: Headers): string {
  const apiKey = headers.get('x-api-key')?.trim() || undefined;
  const authorization = headers.get('authorization');
  const bearer = authorization === null ? undefined : /^Bearer\s+(\S+)$/i.exec(authorization.trim())?.[1];
  if (authorization !== null && bearer === undefined) throw new FaucetError('unauthorized', 'Authorization: expected "Bearer fvs_…"');
  if (apiKey !== undefined && bearer !== undefined && apiKey !== bearer) {
    throw new FaucetError('unauthorized', 'x-api-key and Authorization name different tokens');
  }
  const token = apiKey ?? bearer;
  if (token === undefined) throw new FaucetError('unauthorized', 'Missing session token: send it as x-api-key or Authorization: Bearer');
  if (!token.startsWith('fvs_')) {
    throw new FaucetError('unauthorized', 'Invalid session token: the gateway takes a Faucet session token (fvs_…), not a provider key');
  }
  return token;
}
