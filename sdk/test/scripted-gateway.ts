import type { ServerResponse } from 'node:http';
import { sendJson, startFakeServer, type FakeServer, type RecordedRequest } from './fake-server.ts';

export type ChatAnswer = (request: RecordedRequest, response: ServerResponse) => void | Promise<void>;

export const completion = (requestId = 'req_ok') => ({
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'mock:echo',
  choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
  faucet: {
    request_id: requestId,
    route_mode: 'platform',
    provider: 'mock',
    model: 'echo',
    input_tokens: 1,
    output_tokens: 1,
    estimated: false,
  },
});

/**
 * Sessions always succeed; chat requests are answered by the scripted answers in order (the last
 * one repeats), so a test states exactly what the server does on each attempt.
 */
export async function startScriptedGateway(answers: ChatAnswer[]): Promise<FakeServer & { chatRequests(): RecordedRequest[] }> {
  let chats = 0;
  let sessions = 0;
  const server = await startFakeServer(async (request, response) => {
    if (request.path === '/v1/sessions') {
      const token = `fvs_scripted_${++sessions}`;
      return sendJson(response, 201, {
        session_token: token,
        token_type: 'Bearer',
        expires_at: new Date(Date.now() + 600_000).toISOString(),
      });
    }
    const answer = answers[Math.min(chats++, answers.length - 1)]!;
    await answer(request, response);
  });
  return { ...server, chatRequests: () => server.requestsTo('/v1/chat/completions') };
}

/** Never answers: the request stays open until the client gives up. */
export const hang: ChatAnswer = () => new Promise(() => undefined);
