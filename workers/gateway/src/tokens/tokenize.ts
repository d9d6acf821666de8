/**
 * Faucet's deterministic tokenizer: the GPT-style pre-tokenisation split (contractions, words with
 * their leading space, numbers in runs of up to three digits, punctuation runs, whitespace), then
 * every piece cut into runs of at most four characters — about the ratio of real BPE vocabularies
 * for English. The mock provider counts with it exactly; for real providers it only estimates.
 */
const pieces = /'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}{1,3}| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

const maxPieceLength = 4;

export function tokenize(text: string): string[] {
  const tokens: string[] = [];
  for (const match of text.matchAll(pieces)) {
    const piece = [...match[0]];
    for (let start = 0; start < piece.length; start += maxPieceLength) {
      tokens.push(piece.slice(start, start + maxPieceLength).join(''));
    }
  }
  return tokens;
}

export function countTokens(text: string): number {
  return tokenize(text).length;
}
