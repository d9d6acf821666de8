import { describe, expect, it } from 'vitest';
import { countPromptTokens } from './count-prompt-tokens.ts';
import { countTokens, tokenize } from './tokenize.ts';

describe('tokenize', () => {
  it('splits words with their leading space, punctuation and numbers', () => {
    expect(tokenize('Hello, world! 12345')).toEqual(['Hell', 'o', ',', ' wor', 'ld', '!', ' 123', '45']);
  });

  it('is lossless: the tokens join back to the text', () => {
    const text = "It's 2026 — naïve café, 東京 🚀\n\n  indented\ttabs";
    expect(tokenize(text).join('')).toBe(text);
  });

  it('counts the same text the same way every time, and nothing as zero', () => {
    expect(countTokens('The quick brown fox')).toBe(countTokens('The quick brown fox'));
    expect(tokenize('The quick brown fox')).toEqual(['The', ' qui', 'ck', ' bro', 'wn', ' fox']);
    expect(countTokens('')).toBe(0);
  });
});

describe('countPromptTokens', () => {
  it('adds per-message framing to the text of every message', () => {
    const one = countPromptTokens([{ role: 'user', content: 'hi' }]);
    const two = countPromptTokens([
      { role: 'system', content: 'hi' },
      { role: 'user', content: 'hi' },
    ]);
    expect(one).toBe(3 + 3 + countTokens('user') + countTokens('hi'));
    expect(two - one).toBe(3 + countTokens('system') + countTokens('hi'));
  });

  it('counts text parts, images and tool definitions', () => {
    const text = countPromptTokens([{ role: 'user', content: [{ type: 'text', text: 'look' }] }]);
    const withImage = countPromptTokens([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
        ],
      },
    ]);
    expect(withImage - text).toBe(765);
    const withTools = countPromptTokens([{ role: 'user', content: 'hi' }], [{ type: 'function', function: { name: 'lookup' } }]);
    expect(withTools).toBeGreaterThan(countPromptTokens([{ role: 'user', content: 'hi' }]));
  });
});
