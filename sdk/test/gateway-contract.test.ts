// The SDK ships without the workers' code, so it repeats their wire contract; these checks pin the copies.
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { FaucetObject } from '../../workers/shared/wire/faucet-object.ts';
import type { RouteMode as WireRouteMode } from '../../workers/shared/wire/route-modes.ts';
import { errorStatus } from '../../workers/shared/wire/errors.ts';
import { serverErrorStatus } from '../src/errors.ts';
import type { FaucetMetadata, RouteMode } from '../src/types.ts';

describe('SDK error codes', () => {
  it('repeat exactly the codes and statuses the workers answer with (DESIGN §4)', () => {
    expect(serverErrorStatus).toEqual(errorStatus);
  });
});

describe('SDK call metadata', () => {
  it("accepts every field of the gateway's faucet object (checked by the typecheck npm test runs)", () => {
    const fromGateway = {} as FaucetObject;
    const accepted: FaucetMetadata = fromGateway;
    expectTypeOf(accepted.charge).toEqualTypeOf<FaucetMetadata['charge']>();
    expectTypeOf<FaucetObject['route_mode']>().toExtend<FaucetMetadata['route_mode']>();
    expectTypeOf<NonNullable<FaucetObject['attempts']>>().toEqualTypeOf<NonNullable<FaucetMetadata['attempts']>>();
  });

  it('names exactly the route modes of the wire contract', () => {
    expectTypeOf<RouteMode>().toEqualTypeOf<WireRouteMode>();
  });
});
