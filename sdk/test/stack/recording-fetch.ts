/** A fetch that passes everything through and notes each call's method, path and status, for assertions. */
export interface RecordedCall {
  method: string;
  path: string;
  status: number | 'failed';
}

export function recordingFetch(): { fetch: typeof fetch; calls: RecordedCall[]; statusesOf(path: string): Array<number | 'failed'> } {
  const calls: RecordedCall[] = [];
  const recording: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const call: RecordedCall = { method: init?.method ?? 'GET', path: url.pathname, status: 'failed' };
    calls.push(call);
    const response = await globalThis.fetch(input, init);
    call.status = response.status;
    return response;
  };
  return { fetch: recording, calls, statusesOf: (path) => calls.filter((call) => call.path === path).map((call) => call.status) };
}
