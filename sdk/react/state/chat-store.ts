import type { FaucetClient, ChatMessage, FaucetMetadata, RouteMode } from '@faucet/sdk';
import { Store, isAbort, toShownError, type ShownError } from './store.ts';

export interface ShownMessage {
  id: number;
  role: 'user' | 'assistant';
  content: string;
  /** `stopped` when the user pressed stop mid-answer. */
  status: 'streaming' | 'done' | 'stopped';
  faucet?: FaucetMetadata;
}

export interface ChatState {
  messages: ShownMessage[];
  busy: boolean;
  error: ShownError | undefined;
}

export interface ChatSettings {
  feature: string;
  model?: string;
  routeMode?: RouteMode;
  /** Called after every call that may have cost money, so usage views can refresh. */
  onSettled?: () => void;
}

/** A conversation: sends the whole history, streams the answer in, can be stopped. */
export class ChatStore extends Store<ChatState> {
  private controller: AbortController | undefined;
  private nextId = 1;

  constructor(
    private readonly client: FaucetClient,
    public settings: ChatSettings,
  ) {
    super({ messages: [], busy: false, error: undefined });
  }

  async send(text: string): Promise<void> {
    const content = text.trim();
    if (content === '' || this.getSnapshot().busy) return;
    const history: ChatMessage[] = this.getSnapshot()
      .messages.filter((message) => message.content !== '')
      .map(({ role, content: said }) => ({ role, content: said }));
    const answerId = this.nextId + 1;
    this.update({
      busy: true,
      error: undefined,
      messages: [
        ...this.getSnapshot().messages,
        { id: this.nextId, role: 'user', content, status: 'done' },
        { id: answerId, role: 'assistant', content: '', status: 'streaming' },
      ],
    });
    this.nextId += 2;
    this.controller = new AbortController();
    const { feature, model, routeMode } = this.settings;
    try {
      const stream = this.client.chatStream({
        feature,
        model,
        routeMode,
        input: [...history, { role: 'user', content }],
        signal: this.controller.signal,
      });
      for await (const part of stream) {
        if (part.type === 'delta') this.patchAnswer(answerId, (message) => ({ content: message.content + part.delta }));
        else this.patchAnswer(answerId, () => ({ faucet: part.faucet, status: 'done' }));
      }
    } catch (thrown) {
      if (isAbort(thrown)) this.patchAnswer(answerId, () => ({ status: 'stopped' }));
      else {
        this.update({
          error: toShownError(thrown),
          messages: this.getSnapshot().messages.filter((message) => message.id !== answerId || message.content !== ''),
        });
        this.patchAnswer(answerId, () => ({ status: 'stopped' }));
      }
    } finally {
      this.controller = undefined;
      this.update({ busy: false });
      this.settings.onSettled?.();
    }
  }

  stop(): void {
    this.controller?.abort();
  }

  private patchAnswer(id: number, change: (message: ShownMessage) => Partial<ShownMessage>): void {
    this.update({
      messages: this.getSnapshot().messages.map((message) => (message.id === id ? { ...message, ...change(message) } : message)),
    });
  }
}
