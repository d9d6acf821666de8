/**
 * The device identity of an `anonymous` app (docs/identity.md): 192 random bits, base64url, made
 * once and kept (localStorage when the page has it, else this client's memory), so the same device
 * gets the same end user and wallet. It is a credential of sorts: whoever has it is that user.
 */

/** Where the id is kept; `localStorage` fits, as does any store with the same two methods. */
export interface DeviceIdStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

/** What the server accepts as a `device_id` (at least 128 random bits). */
const deviceIdPattern = /^[A-Za-z0-9_-]{22,128}$/;

function randomDeviceId(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(24));
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The page's localStorage, if it has one that works (private modes and sandboxed frames may throw). */
function pageStorage(): DeviceIdStorage | undefined {
  try {
    const storage = (globalThis as { localStorage?: DeviceIdStorage }).localStorage;
    return storage && typeof storage.getItem === 'function' ? storage : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Returns the device id, created on first use. `storage: null` keeps it in memory only; a store
 * that throws (quota, privacy settings) is treated the same, for this client's life.
 */
export function deviceIdFor(publicAppId: string, storage: DeviceIdStorage | null | undefined = pageStorage()): () => string {
  const key = `faucet:device-id:${publicAppId}`;
  let remembered: string | undefined;
  return () => {
    if (remembered) return remembered;
    let stored: string | null = null;
    try {
      stored = storage?.getItem(key) ?? null;
    } catch {
      stored = null;
    }
    if (stored !== null && deviceIdPattern.test(stored)) return (remembered = stored);
    remembered = randomDeviceId();
    try {
      storage?.setItem(key, remembered);
    } catch {
      // Kept in memory only: the next page load will be a new device.
    }
    return remembered;
  };
}
