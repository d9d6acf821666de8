import { describe, expect, it } from 'vitest';
import { errorStatus } from '../../workers/shared/errors.ts';
import { serverErrorStatus } from '../src/errors.ts';

describe('SDK error codes', () => {
  it('repeat exactly the codes and statuses the workers answer with (DESIGN §4)', () => {
    expect(serverErrorStatus).toEqual(errorStatus);
  });
});
