import { describe, expect, it } from 'vitest';
import { FaucetError } from '../wire/errors.ts';
import { encodeBase64, keyringFrom } from './keyring.ts';
import { openKey, sealKey } from './seal.ts';

const keyText = (fill: number) => encodeBase64(new Uint8Array(32).fill(fill));
const context = { credentialId: '11111111-1111-4111-8111-111111111111', provider: 'openai' };

describe('keyring from PROVIDER_KEY_ENCRYPTION_KEY', () => {
  it('takes the first entry as current and keeps the others for decryption', async () => {
    const keyring = await keyringFrom(`v2:${keyText(2)}, v1:${keyText(1)}`);
    expect(keyring.current.version).toBe(2);
    expect([...keyring.byVersion.keys()]).toEqual([2, 1]);
  });

  it.each([
    ['empty', ''],
    ['no version', keyText(1)],
    ['a short key', `v1:${encodeBase64(new Uint8Array(16))}`],
    ['a long key', `v1:${encodeBase64(new Uint8Array(48))}`],
    ['version zero', `v0:${keyText(1)}`],
    ['a version twice', `v1:${keyText(1)},v1:${keyText(2)}`],
    ['a trailing comma', `v1:${keyText(1)},`],
  ])('refuses %s without quoting the secret', async (_, secret) => {
    const error = await keyringFrom(secret).catch((caught: unknown) => caught);
    expect(FaucetError.isInstance(error)).toBe(true);
    expect((error as FaucetError).code).toBe('internal_error');
    if (secret.length > 10) expect((error as Error).message).not.toContain(secret.slice(3, 20));
  });
});

describe('sealing a provider key (AES-256-GCM)', () => {
  it('round-trips, with a fresh 12-byte IV every time', async () => {
    const keyring = await keyringFrom(`v1:${keyText(1)}`);
    const first = await sealKey(keyring, 'sk-proj-secret', context);
    const second = await sealKey(keyring, 'sk-proj-secret', context);
    expect(first.keyVersion).toBe(1);
    expect(atob(first.iv)).toHaveLength(12);
    expect(first.iv).not.toBe(second.iv);
    expect(first.ciphertext).not.toBe(second.ciphertext);
    expect(first.ciphertext).not.toContain('secret');
    expect(await openKey(keyring, first, context)).toBe('sk-proj-secret');
  });

  it('does not open a ciphertext moved to another row or provider, or tampered with', async () => {
    const keyring = await keyringFrom(`v1:${keyText(1)}`);
    const sealed = await sealKey(keyring, 'sk-proj-secret', context);
    await expect(openKey(keyring, sealed, { ...context, credentialId: '22222222-2222-4222-8222-222222222222' })).rejects.toThrow(
      /could not be decrypted/,
    );
    await expect(openKey(keyring, sealed, { ...context, provider: 'anthropic' })).rejects.toThrow(/could not be decrypted/);
    const bytes = Uint8Array.from(atob(sealed.ciphertext), (char) => char.charCodeAt(0));
    bytes[0]! ^= 1;
    await expect(openKey(keyring, { ...sealed, ciphertext: encodeBase64(bytes) }, context)).rejects.toThrow(/could not be decrypted/);
  });

  it('opens rows of an older version while it is in the keyring, and names a missing version', async () => {
    const old = await keyringFrom(`v1:${keyText(1)}`);
    const sealed = await sealKey(old, 'sk-proj-secret', context);
    const rotating = await keyringFrom(`v2:${keyText(2)},v1:${keyText(1)}`);
    expect(await openKey(rotating, sealed, context)).toBe('sk-proj-secret');
    expect((await sealKey(rotating, 'x', context)).keyVersion).toBe(2);
    const rotated = await keyringFrom(`v2:${keyText(2)}`);
    await expect(openKey(rotated, sealed, context)).rejects.toThrow(/v1 is not configured/);
  });
});
