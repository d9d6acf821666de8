/**
 * OpenAI chat request → Gemini `generateContent` request. System and developer messages become the
 * `systemInstruction`; assistant turns are role `model`, their tool calls `functionCall` parts; tool
 * answers become `functionResponse` parts of a user turn, named after the call they answer (Gemini
 * matches answers by function name, OpenAI by call id); consecutive turns of one role are merged.
 */
import { FaucetError } from '#shared/wire/errors.ts';
import type { ChatMessage, ChatRequest } from '../../openai/chat-schemas.ts';
import { messageText } from '../../tokens/count-prompt-tokens.ts';

type GeminiPart = Record<string, unknown>;
interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: Array<{ functionDeclarations: Array<Record<string, unknown>> }>;
  toolConfig?: { functionCallingConfig: Record<string, unknown> };
  generationConfig?: Record<string, unknown>;
}

export function toGeminiRequest(request: ChatRequest): GeminiRequest {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const functionNameOfCall = new Map<string, string>();
  const append = (role: GeminiContent['role'], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };

  for (const message of request.messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        system.push(messageText(message));
        break;
      case 'user':
        append('user', userParts(message));
        break;
      case 'assistant':
        for (const call of message.tool_calls ?? []) functionNameOfCall.set(call.id, call.function.name);
        append('model', modelParts(message));
        break;
      case 'tool': {
        const name = functionNameOfCall.get(message.tool_call_id ?? '');
        if (name === undefined) {
          throw new FaucetError('invalid_request', 'A tool message answers no tool call of an earlier assistant message (tool_call_id).');
        }
        append('user', [{ functionResponse: { name, response: toolResponse(messageText(message)) } }]);
        break;
      }
      default:
        throw new FaucetError('invalid_request', `Messages with role "${message.role}" are not supported for Google models.`);
    }
  }
  if (contents.length === 0) throw new FaucetError('invalid_request', 'Google models need at least one user or assistant message.');

  const translated: GeminiRequest = { contents };
  if (system.length > 0) translated.systemInstruction = { parts: [{ text: system.join('\n\n') }] };
  if (request.tools !== undefined && request.tools.length > 0) {
    translated.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.function.name,
          ...(tool.function.description === undefined ? {} : { description: tool.function.description }),
          ...(tool.function.parameters === undefined ? {} : { parametersJsonSchema: tool.function.parameters }),
        })),
      },
    ];
  }
  const toolConfig = functionCallingConfig(request);
  if (toolConfig !== undefined) translated.toolConfig = { functionCallingConfig: toolConfig };
  const generationConfig = generationConfigOf(request);
  if (Object.keys(generationConfig).length > 0) translated.generationConfig = generationConfig;
  return translated;
}

function generationConfigOf(request: ChatRequest): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const limits = [request.max_completion_tokens, request.max_tokens].filter((value): value is number => typeof value === 'number');
  if (limits.length > 0) config.maxOutputTokens = Math.min(...limits);
  if (typeof request.temperature === 'number') config.temperature = request.temperature;
  if (typeof request.top_p === 'number') config.topP = request.top_p;
  if (request.stop != null) config.stopSequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (typeof request.presence_penalty === 'number') config.presencePenalty = request.presence_penalty;
  if (typeof request.frequency_penalty === 'number') config.frequencyPenalty = request.frequency_penalty;
  if (typeof request.seed === 'number') config.seed = request.seed;
  const format = request.response_format;
  if (format?.type === 'json_object') config.responseMimeType = 'application/json';
  if (format?.type === 'json_schema') {
    config.responseMimeType = 'application/json';
    if (format.json_schema.schema !== undefined) config.responseJsonSchema = format.json_schema.schema;
  }
  return config;
}

function functionCallingConfig(request: ChatRequest): Record<string, unknown> | undefined {
  const choice = request.tool_choice;
  if (choice === undefined || choice === 'auto') return undefined;
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
}

function userParts(message: ChatMessage): GeminiPart[] {
  if (typeof message.content === 'string') return [{ text: message.content }];
  if (!Array.isArray(message.content)) return [];
  return message.content.map((part): GeminiPart => {
    if (part.type === 'text') return { text: part.text };
    return imagePart(part.image_url.url);
  });
}

/** Gemini takes images inline; it fetches no URL it was not given through its own file API, and the gateway fetches none. */
function imagePart(url: string): GeminiPart {
  const dataUrl = /^data:(image\/[a-z+.-]+);base64,(.*)$/s.exec(url);
  if (dataUrl === null) {
    throw new FaucetError('invalid_request', 'Google models take images only as data: URLs (base64); an http(s) image URL is not fetched.');
  }
  return { inlineData: { mimeType: dataUrl[1], data: dataUrl[2] } };
}

function modelParts(message: ChatMessage): GeminiPart[] {
  const parts: GeminiPart[] = [];
  const text = messageText(message);
  if (text !== '') parts.push({ text });
  for (const call of message.tool_calls ?? []) {
    parts.push({
      functionCall: { name: call.function.name, args: parseObject(call.function.arguments, 'A tool call in the conversation') },
    });
  }
  return parts;
}

/** Gemini wants an object as a function's response: a JSON object answer goes as is, anything else as `{ content }`. */
function toolResponse(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Plain text answer.
  }
  return { content: text };
}

function parseObject(text: string, what: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new FaucetError('invalid_request', `${what} has arguments that are not JSON.`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FaucetError('invalid_request', `${what} has arguments that are not a JSON object.`);
  }
  return value as Record<string, unknown>;
}
