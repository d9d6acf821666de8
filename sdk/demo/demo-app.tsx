import { StrictMode, useId, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { FaucetChat, FaucetFeatureCommand, FaucetProvider, FaucetUsage, faucetStyles } from '@faucet/sdk/react';

/** Written into the page by the demo server. */
interface DemoConfig {
  publicAppId: string;
  userId: string;
  featureKey: string;
  model: string;
}

const demoStyles = `
body { margin: 0; background: #eef1f5; font-family: system-ui, sans-serif; color: #1c1f24; }
.demo { max-width: 72rem; margin: 0 auto; padding: 1.5rem; display: grid; gap: 1rem; }
.demo header h1 { margin: 0 0 0.25rem; }
.demo header p { margin: 0; color: #5b6270; }
.demo__model { display: flex; gap: 0.5rem; align-items: center; }
.demo__model input { font: inherit; padding: 0.25rem 0.5rem; }
.demo__grid { display: grid; gap: 1rem; grid-template-columns: repeat(auto-fit, minmax(22rem, 1fr)); align-items: start; }
.demo__grid > .faucet-usage { grid-column: 1 / -1; }
`;

function DemoPage({ config }: { config: DemoConfig }) {
  const [model, setModel] = useState(config.model);
  const modelId = useId();
  // The demo server proxies these paths to the control API and the gateway, so the page has one origin.
  const origin = window.location.origin;
  return (
    <FaucetProvider publicAppId={config.publicAppId} userId={config.userId} baseUrl={`${origin}/api`} gatewayBaseUrl={`${origin}/gateway`}>
      <style>{faucetStyles + demoStyles}</style>
      <div className="demo">
        <header>
          <h1>Faucet demo</h1>
          <p>
            App <code>{config.publicAppId}</code>, end user <code>{config.userId}</code>, feature <code>{config.featureKey}</code>. Every call is metered
            and booked; the usage panel shows the balance going down.
          </p>
        </header>
        <p className="demo__model">
          <label htmlFor={modelId}>Model</label>
          <input id={modelId} value={model} onChange={(event) => setModel(event.target.value)} />
        </p>
        <main className="demo__grid">
          <FaucetChat feature={config.featureKey} model={model} />
          <FaucetFeatureCommand
            feature={config.featureKey}
            model={model}
            title="Feature command"
            initialInput={JSON.stringify({ task: 'summarise', text: 'Faucet meters every model call.' })}
          />
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
