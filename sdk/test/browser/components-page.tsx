import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { FaucetChat, FaucetProvider, FaucetUsage, faucetStyles } from '@faucet/sdk/react';

/** A bare page for component tests: one chat and the usage panel, a themed class, and a user switch. */
const { apiUrl, publicAppId } = JSON.parse(document.getElementById('config')!.textContent!) as { apiUrl: string; publicAppId: string };

function Harness() {
  const [userId, setUserId] = useState('alice');
  return (
    <>
      <style>{`${faucetStyles} .themed { --faucet-accent: rgb(1, 2, 3); }`}</style>
      <button type="button" onClick={() => setUserId('bob')}>
        Switch to bob
      </button>
      <FaucetProvider publicAppId={publicAppId} userId={userId} baseUrl={apiUrl}>
        <FaucetChat feature="chat" model="mock:echo" className="themed" />
        <FaucetUsage />
      </FaucetProvider>
    </>
  );
}

createRoot(document.getElementById('root')!).render(<Harness />);
