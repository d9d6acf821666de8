import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { float32Base64, float32FromBase64 } from './embedding-encoding.ts';

/** How the `openai` client reads a base64 embedding: the bytes as a Float32Array (little-endian here). */
function decodedAsTheOpenAiClientDoes(text: string): number[] {
  const bytes = Buffer.from(text, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

describe('base64 embeddings', () => {
  it('are float32 little-endian bytes in standard base64, as OpenAI sends them', () => {
    // 1.0 is 0x3f800000: bytes 00 00 80 3f.
    expect(float32Base64([1])).toBe('AACAPw==');
    expect(float32Base64([1, -2])).toBe(Buffer.from(new Float32Array([1, -2]).buffer).toString('base64'));
    expect(float32Base64([])).toBe('');
  });

  it('decode, in the openai client’s way, to the vector rounded to float32', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { maxLength: 64 }), (vector) => {
        const rounded = vector.map(Math.fround);
        expect(decodedAsTheOpenAiClientDoes(float32Base64(vector))).toEqual(rounded);
        expect(float32FromBase64(float32Base64(vector))).toEqual(rounded);
      }),
      { numRuns: 300 },
    );
  });

  it('encode vectors longer than one slice of the encoder', () => {
    const vector = Array.from({ length: 20_000 }, (_, index) => Math.fround(Math.sin(index)));
    expect(decodedAsTheOpenAiClientDoes(float32Base64(vector))).toEqual(vector);
  });

  it('are refused when they are not base64 of whole float32 values', () => {
    expect(float32FromBase64('not base64!')).toBeNull();
    expect(float32FromBase64('AACA')).toBeNull();
  });
});
