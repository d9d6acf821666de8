import { FaucetError } from '#shared/wire/errors.ts';

/** The JSON of one event a provider streamed; one that is not JSON is an upstream failure mid-stream. */
export function upstreamEventJson(data: string, label: string): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new FaucetError('upstream_error', `${label} streamed an event that is not JSON.`, { cause: error });
  }
}
