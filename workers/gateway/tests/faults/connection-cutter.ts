/**
 * Cuts the database connection of the Workers runtime at a chosen statement, the way a network drop
 * between the worker and the database would: every WebSocket the Neon driver opens goes through this
 * class, and when armed, the connection that sends a statement containing `marker` is closed either
 * before the statement leaves (it never reaches the server) or as soon as the server's answer
 * arrives (the server has executed and committed it; the worker never learns the result).
 */
import { neonConfig } from '@neondatabase/serverless';

export type CutPoint = 'before_statement' | 'after_commit';

export interface ConnectionCutter {
  /** Cuts the next `times` connections (default 1) that send a statement containing `marker`. */
  arm(marker: string, point: CutPoint, times?: number): void;
  /** How many connections were cut since installation. */
  readonly cuts: number;
}

const decoder = new TextDecoder();

function textOf(data: unknown): string {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return decoder.decode(data);
  if (ArrayBuffer.isView(data)) return decoder.decode(data);
  return '';
}

export function installConnectionCutter(): ConnectionCutter {
  let armed: { marker: string; point: CutPoint; times: number } | null = null;
  let cuts = 0;

  class CuttableWebSocket extends WebSocket {
    #dropAnswers = false;

    override send(data: string | ArrayBufferLike | ArrayBufferView | Blob): void {
      if (armed && textOf(data).includes(armed.marker)) {
        const point = armed.point;
        armed = armed.times > 1 ? { ...armed, times: armed.times - 1 } : null;
        cuts++;
        if (point === 'before_statement') {
          this.close(1011, 'fault injection');
          return;
        }
        this.#dropAnswers = true;
      }
      super.send(data);
    }

    override addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: unknown): void {
      if (type !== 'message' || typeof listener !== 'function') {
        super.addEventListener(type, listener as EventListener, options as AddEventListenerOptions);
        return;
      }
      super.addEventListener('message', (event: Event) => {
        if (this.#dropAnswers) {
          if (this.readyState === WebSocket.OPEN) this.close(1011, 'fault injection');
          return;
        }
        listener(event);
      });
    }
  }

  neonConfig.webSocketConstructor = CuttableWebSocket as unknown as typeof WebSocket;
  return {
    arm(marker, point, times = 1) {
      armed = { marker, point, times };
    },
    get cuts() {
      return cuts;
    },
  };
}
