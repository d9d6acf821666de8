import { describe, expect, it } from 'vitest';
import { acceptedBetas, requireAnthropicVersion, sessionTokenOf } from './messages-headers.ts';

const token = `fvs_${'a'.repeat(43)}`;

describe('anthropic-version', () => {
  it('is required, as Anthropic requires it', () => {
    expect(() => requireAnthropicVersion(new Headers())).toThrow('anthropic-version: header is required');
  });

  it.each(['2023-06-01', '2026-10-21'])('accepts %s', (version) => {
    expect(requireAnthropicVersion(new Headers({ 'anthropic-version': version }))).toBe(version);
  });

  it('refuses what is not a dated version', () => {
    expect(() => requireAnthropicVersion(new Headers({ 'anthropic-version': 'latest' }))).toThrow('is not a version');
  });
});

describe('anthropic-beta', () => {
  it('accepts every beta Claude Code 2.1.197 sends', () => {
    const header =
      'interleaved-thinking-2025-05-14, thinking-token-count-2026-05-13, context-management-2025-06-27, prompt-caching-scope-2026-01-05, claude-code-20250219';
    expect(acceptedBetas(new Headers({ 'anthropic-beta': header }))).toEqual([
      'interleaved-thinking-2025-05-14',
      'thinking-token-count-2026-05-13',
      'context-management-2025-06-27',
      'prompt-caching-scope-2026-01-05',
      'claude-code-20250219',
    ]);
  });

  it('accepts every beta Claude Code 2.1.332 sends (tool search; with --verbose, thinking progress updates)', () => {
    const header =
      'interleaved-thinking-2025-05-14,context-management-2025-06-27,claude-code-20250219,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20,thinking-display-updates-2026-08-18';
    expect(acceptedBetas(new Headers({ 'anthropic-beta': header }))).toEqual(header.split(','));
  });

  it.each([
    'fine-grained-tool-streaming-2025-05-14',
    'token-efficient-tools-2025-02-19',
    'oauth-2025-04-20',
    'prompt-caching-2024-07-31',
    'extended-cache-ttl-2025-04-11',
    'output-128k-2025-02-19',
    'effort-2025-11-24',
  ])('accepts %s', (beta) => {
    expect(acceptedBetas(new Headers({ 'anthropic-beta': beta }))).toEqual([beta]);
  });

  it.each([
    ['context-1m-2025-08-07', 'long-context price'],
    ['web-search-2025-03-05', 'server tools'],
    ['code-execution-2025-08-25', 'server tools'],
    ['computer-use-2025-01-24', 'not served'],
    ['mcp-client-2025-04-04', 'not served'],
    ['files-api-2025-04-14', 'Files API'],
    ['some-future-beta-2027-01-01', 'the gateway does not know what it changes'],
  ])('refuses %s', (beta, reason) => {
    expect(() => acceptedBetas(new Headers({ 'anthropic-beta': `claude-code-20250219,${beta}` }))).toThrow(
      expect.objectContaining({ code: 'invalid_request', message: expect.stringContaining(reason) }),
    );
  });

  it('takes no header as no betas', () => {
    expect(acceptedBetas(new Headers())).toEqual([]);
  });
});

describe('the session token', () => {
  it('is read from x-api-key (the Anthropic SDK’s apiKey)', () => {
    expect(sessionTokenOf(new Headers({ 'x-api-key': token }))).toBe(token);
  });

  it('is read from Authorization: Bearer (Claude Code’s ANTHROPIC_AUTH_TOKEN)', () => {
    expect(sessionTokenOf(new Headers({ authorization: `Bearer ${token}` }))).toBe(token);
  });

  it('may be in both when they agree', () => {
    expect(sessionTokenOf(new Headers({ 'x-api-key': token, authorization: `Bearer ${token}` }))).toBe(token);
  });

  it.each([
    [{}, 'Missing session token'],
    [{ 'x-api-key': 'sk-ant-api03-xyz' }, 'not a provider key'],
    [{ authorization: 'Basic abc' }, 'expected "Bearer fvs_…"'],
    [{ 'x-api-key': token, authorization: `Bearer fvs_${'b'.repeat(43)}` }, 'name different tokens'],
  ])('is refused with 401 for %j', (headers, message) => {
    expect(() => sessionTokenOf(new Headers(headers))).toThrow(
      expect.objectContaining({ code: 'unauthorized', status: 401, message: expect.stringContaining(message) }),
    );
  });
});
