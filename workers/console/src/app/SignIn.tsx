/**
 * The sign-in screen: a developer key (`fdk_…`) opens the developer view, the admin token the
 * operator view. The credential goes to the API once to be checked, then lives in this tab only.
 */
import { type FormEvent, useState } from 'react';
import { navigate } from './router.ts';
import { type Role, useSession } from './session.tsx';
import { ErrorLine } from './ui/parts.tsx';

export function SignIn() {
  const { signIn } = useSession();
  const [role, setRole] = useState<Role>('developer');
  const [credential, setCredential] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await signIn(role, credential);
      navigate(`/${role}`);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="signin">
      <h1>Faucet console</h1>
      <form onSubmit={submit} className="card" aria-label="Sign in">
        <fieldset>
          <legend>Sign in as</legend>
          <label>
            <input type="radio" name="role" value="developer" checked={role === 'developer'} onChange={() => setRole('developer')} />{' '}
            Developer
          </label>
          <label>
            <input type="radio" name="role" value="operator" checked={role === 'operator'} onChange={() => setRole('operator')} /> Operator
          </label>
        </fieldset>
        <div className="field">
          <label htmlFor="credential">{role === 'developer' ? 'Developer key' : 'Admin token'}</label>
          <input
            id="credential"
            type="password"
            autoComplete="off"
            spellCheck={false}
            required
            value={credential}
            onChange={(event) => setCredential(event.target.value)}
            aria-describedby="credential-hint"
          />
          <small id="credential-hint" className="muted">
            Kept in this tab only (session storage); closing the tab signs you out.
          </small>
        </div>
        <ErrorLine error={error} />
        <button type="submit" disabled={busy || !credential.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
