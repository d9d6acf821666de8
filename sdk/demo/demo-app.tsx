import { StrictMode, useEffect, useId, useState } from 'react';
import { createRoot } from 'react-dom/client';
import type { BridgeDiagnosis, RouteMode, Session } from '@faucet/sdk';
import {
  FaucetChat,
  FaucetFeatureCommand,
  FaucetProvider,
  FaucetReceipt,
  FaucetTopUp,
  FaucetUsage,
  faucetStyles,
  useFaucet,
} from '@faucet/sdk/react';

/** Written into the page by the demo server. */
interface DemoConfig {
  publicAppId: string;
  userId: string;
  featureKey: string;
  model: string;
  bridgeUrl: string;
  /** `server`: the demo server mints sessions with the developer key; `signed`: it signs user tokens the page exchanges. */
  identity: 'server' | 'signed';
}

/** The page asks its own server, which mints the session with the developer key as an app backend does. */
async function demoSession(): Promise<Session> {
  const response = await fetch('/demo-session', { method: 'POST' });
  if (!response.ok) throw new Error(`The demo server could not mint a session (HTTP ${response.status})`);
  return (await response.json()) as Session;
}

/** For a `signed` app: the page's server signs a short user token, which the SDK exchanges for a session. */
async function demoUserToken(): Promise<string> {
  const response = await fetch('/demo-user-token', { method: 'POST' });
  if (!response.ok) throw new Error(`The demo server could not sign a user token (HTTP ${response.status})`);
  return ((await response.json()) as { token: string }).token;
}

const demoStyles = `
body { margin: 0; background: #eef1f5; font-family: system-ui, sans-serif; color: #1c1f24; }
.demo { max-width: 72rem; margin: 0 auto; padding: 1.5rem; display: grid; gap: 1rem; }
.demo header h1 { margin: 0 0 0.25rem; }
.demo header p { margin: 0; color: #5b6270; }
.demo__controls { display: flex; flex-wrap: wrap; gap: 1rem; align-items: center; margin: 0; }
.demo__controls :is(input, select) { font: inherit; padding: 0.25rem 0.5rem; }
.demo__bridge { margin: 0; font-size: 0.9rem; color: #5b6270; }
.demo__grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); align-items: start; }
.demo__grid > .faucet-usage { grid-column: 1 / -1; }
`;

/** Whether the local route can work right now, in words. */
function BridgeStatus({ origin }: { origin: string }) {
  const faucet = useFaucet();
  const [diagnosis, setDiagnosis] = useState<BridgeDiagnosis | undefined>();
  useEffect(() => {
    const controller = new AbortController();
    faucet.local.diagnose(controller.signal).then(setDiagnosis, () => undefined);
    return () => controller.abort();
  }, [faucet]);
  if (!diagnosis) return <p className="demo__bridge">Looking for a local bridge…</p>;
  if (diagnosis.available) return <p className="demo__bridge">Local bridge ready: the local route runs on your own model server.</p>;
  return (
    <p className="demo__bridge">
      Local route unavailable: {diagnosis.problems.join('; ')}. Start it with <code>faucet-bridge start --allow-origin {origin}</code>.
    </p>
  );
}

function DemoPage({ config }: { config: DemoConfig }) {
  const [model, setModel] = useState(config.model);
  const [routeMode, setRouteMode] = useState<RouteMode>('platform');
  const modelId = useId();
  const routeId = useId();
  // The demo server proxies these paths to the control API and the gateway, so the page has one origin.
  const origin = window.location.origin;
  // On the local route an empty model means "the bridge's first model".
  const chosenModel = routeMode === 'local' && model.startsWith('mock:') ? undefined : model || undefined;
  // Platform is not forced: without a route mode the gateway applies the feature's own routing policy.
  const localOrDefault = routeMode === 'local' ? 'local' : undefined;
  return (
    <FaucetProvider
      publicAppId={config.publicAppId}
      {...(config.identity === 'signed' ? { userToken: demoUserToken } : { session: demoSession })}
      baseUrl={`${origin}/api`}
      gatewayBaseUrl={`${origin}/gateway`}
      bridgeUrl={config.bridgeUrl}
    >
      <style>{faucetStyles + demoStyles}</style>
      <div className="demo">
        <header>
          <h1>Faucet demo</h1>
          <p>
            App <code>{config.publicAppId}</code>, end user <code>{config.userId}</code>, feature <code>{config.featureKey}</code>. Every
            call is metered and booked; the usage panel shows the balance going down.
          </p>
        </header>
        <div className="demo__controls">
          <span>
            <label htmlFor={routeId}>Route</label>{' '}
            <select id={routeId} value={routeMode} onChange={(event) => setRouteMode(event.target.value as RouteMode)}>
              <option value="platform">Platform (gateway)</option>
              <option value="local">Local (bridge)</option>
            </select>
          </span>
          <span>
            <label htmlFor={modelId}>Model</label> <input id={modelId} value={model} onChange={(event) => setModel(event.target.value)} />
          </span>
        </div>
        <BridgeStatus origin={origin} />
        <main className="demo__grid">
          <FaucetChat feature={config.featureKey} model={chosenModel} routeMode={localOrDefault} />
          <FaucetFeatureCommand
            feature={config.featureKey}
            model={chosenModel}
            routeMode={localOrDefault}
            title="Feature command"
            initialInput={JSON.stringify({ task: 'summarise', text: 'Faucet meters every model call.' })}
          />
          <FaucetTopUp />
          <FaucetReceipt title="Receipt of the last call" />
          <FaucetUsage limit={5} />
        </main>
      </div>
    </FaucetProvider>
  );
}

const config = JSON.parse(document.getElementById('faucet-demo-config')!.textContent!) as DemoConfig;
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <DemoPage config={config} />
  </StrictMode>,
);
