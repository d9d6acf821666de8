/**
 * OpenAI's `encoding_format: "base64"`: a vector's float32 values, little-endian, one after the other,
 * in standard base64 (the `openai` client asks for it by default and decodes it so). Providers that
 * answer floats only have their vectors encoded here.
 */

export function float32Base64(vector: readonly number[]): string {
  const bytes = new Uint8Array(vector.length * 4);
  const view = new DataView(bytes.buffer);
  for (const [index, value] of vector.entries()) view.setFloat32(index * 4, value, true);
  return base64(bytes);
}

/** The floats of a base64 vector (tests, and checks of an upstream's answer); null when it is not one. */
export function float32FromBase64(text: string): number[] | null {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return null;
  const binary = atob(text);
  if (binary.length % 4 !== 0) return null;
  const view = new DataView(new ArrayBuffer(binary.length));
  for (let index = 0; index < binary.length; index += 1) view.setUint8(index, binary.charCodeAt(index));
  return Array.from({ length: binary.length / 4 }, (_, index) => view.getFloat32(index * 4, true));
}

/** `btoa` takes a binary string; built in slices, as a long vector's argument list would overflow the stack. */
function base64(bytes: Uint8Array): string {
  let binary = '';
  const slice = 0x8000;
  for (let start = 0; start < bytes.length; start += slice) {
    binary += String.fromCharCode(...bytes.subarray(start, start + slice));
  }
  return btoa(binary);
}
