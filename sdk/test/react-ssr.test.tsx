import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';

describe('React layer on the server', () => {
  it('imports without touching window or document, and renders every component to HTML', async () => {
    const touched: string[] = [];
    for (const name of ['window', 'document', 'localStorage']) {
      Object.defineProperty(globalThis, name, {
        configurable: true,
        get() {
          touched.push(name);
          throw new Error(`${name} touched`);
        },
      });
    }
    try {
      const { FaucetProvider, FaucetChat, FaucetFeatureCommand, FaucetUsage, FaucetTopUp, FaucetReceipt } = await import(
        '@faucet/sdk/react'
      );
      const html = renderToString(
        <FaucetProvider publicAppId="app_x" userId="u1" baseUrl="http://127.0.0.1:1">
          <FaucetChat feature="chat" />
          <FaucetFeatureCommand feature="chat" initialInput="{not json" />
          <FaucetUsage />
          <FaucetTopUp />
          <FaucetReceipt />
        </FaucetProvider>,
      );
      expect(touched).toEqual([]);
      expect(html).toContain('role="log"');
      expect(html).toContain('>Message</label>');
      expect(html).toContain('>Input (JSON)</label>');
      expect(html).toMatch(/role="alert"[^>]*data-code="invalid_json"/);
      expect(html).toContain('<caption>Recent usage</caption>');
      expect(html).toContain('>Amount (USD)</label>');
      expect(html).toMatch(/<section class="faucet-topup"[^>]*data-phase="idle"/);
      expect(html).toMatch(/<section class="faucet-receipt"/);
    } finally {
      for (const name of ['window', 'document', 'localStorage']) delete (globalThis as Record<string, unknown>)[name];
    }
  });
});

describe('FaucetUsageSummary', () => {
  it('shows request ID, route, model, tokens, and the report status of a local call', async () => {
    const { FaucetUsageSummary } = await import('@faucet/sdk/react');
    const html = renderToString(
      <FaucetUsageSummary
        faucet={{
          request_id: 'loc_1',
          route_mode: 'local',
          provider: 'ollama',
          model: 'llama3.2:3b',
          input_tokens: 11,
          output_tokens: 5,
          estimated: true,
          usage_report_status: 'queued',
        }}
      />,
    );
    for (const text of ['loc_1', 'local', 'ollama:llama3.2:3b', '11 in / 5 out', '(estimated)', 'Usage report', 'queued'])
      expect(html).toContain(text);
    expect(html).not.toContain('Charge');
  });
});

describe('FaucetReceipt', () => {
  it("shows the answer's metadata before the booking is known: request ID, route, model, tokens, charge", async () => {
    const { FaucetProvider, FaucetReceipt } = await import('@faucet/sdk/react');
    const html = renderToString(
      <FaucetProvider publicAppId="app_x" userId="u1" baseUrl="http://127.0.0.1:1">
        <FaucetReceipt
          faucet={{
            request_id: 'sdk_abc',
            route_mode: 'platform',
            provider: 'mock',
            model: 'echo',
            input_tokens: 3,
            output_tokens: 4,
            estimated: false,
            charge: { currency: 'USD', amount_usd: '0.00001234', upstream_cost_usd: '0.00001000' },
          }}
        />
      </FaucetProvider>,
    );
    for (const text of ['sdk_abc', 'platform', 'mock:echo', '3 in / 4 out', '0.00001234 USD', 'Booking']) expect(html).toContain(text);
    // The upstream cost is the developer's business, not the end user's receipt.
    expect(html).not.toContain('0.00001000');
  });
});
