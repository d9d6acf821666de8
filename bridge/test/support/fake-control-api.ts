import { listen, readBody, type Listening } from './listen';

export interface FakeControlApi extends Listening {
  /** Reports recorded, in arrival order, with the bearer token each came with. */
  recorded: Array<{ body: any; authorization: string | undefined }>;
  /** Every POST /v1/usage/local, including refused ones. */
  attempts: number;
  /** Status to answer with next (200 records the report). */
  nextStatuses: number[];
}

/** The control API's `POST /v1/usage/local`: idempotent per request_id, answers from a queue of statuses. */
export async function startFakeControlApi(port = 0): Promise<FakeControlApi> {
  const state = { recorded: [] as FakeControlApi['recorded'], attempts: 0, nextStatuses: [] as number[] };
  // The handler mutates `state`, which becomes the returned object, so counts stay live.
  const listening = await listen(async (request, response) => {
    const body = JSON.parse(await readBody(request));
    state.attempts += 1;
    const status = state.nextStatuses.shift() ?? 200;
    response.writeHead(status, { 'content-type': 'application/json' });
    if (status !== 200) {
      const code = status === 401 ? 'unauthorized' : status === 400 ? 'invalid_request' : 'internal_error';
      response.end(JSON.stringify({ error: { code, message: 'refused by the fake', request_id: 'req_fake' } }));
      return;
    }
    const already = state.recorded.some((entry) => entry.body.request_id === body.request_id);
    if (!already) state.recorded.push({ body, authorization: request.headers.authorization });
    response.end(
      JSON.stringify({
        request_id: body.request_id,
        recorded: !already,
        route_mode: 'local',
        charge: { currency: 'USD', amount_usd: '0.00000000', upstream_cost_usd: '0.00000000' },
      }),
    );
  }, port);
  return Object.assign(state, listening);
}
