import { FaucetError } from '../wire/errors.ts';

export type RatingErrorReason = 'negative_tokens' | 'invalid_tokens' | 'unknown_route' | 'unknown_model' | 'invalid_settings';

/** A usage that cannot be rated. Always the caller's input, so always `invalid_request`. */
export class RatingError extends FaucetError {
  readonly reason: RatingErrorReason;

  constructor(reason: RatingErrorReason, message: string) {
    super('invalid_request', message);
    this.name = 'RatingError';
    this.reason = reason;
  }
}
