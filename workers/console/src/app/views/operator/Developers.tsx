/**
 * Developers: onboard one (its first developer key is shown once, here, and never again), list
 * them a page at a time, and suspend or unsuspend one (its keys, sessions and calls stop at once).
 */
import { useState } from 'react';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Section } from '../../ui/parts.tsx';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface Developer {
  id: string;
  name: string;
  email: string;
  payout_details_ref: string | null;
  suspended: boolean;
  suspended_at: string | null;
  created_at: string;
}

function CreateDeveloper({ onCreated }: { onCreated(): void }) {
  const api = useApi();
  const [name, setName] = useState('');
  const [email, setEmail] = useState('');
  const [payoutRef, setPayoutRef] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<{ developer: Developer; key: { api_key: string } } | undefined>();
  return (
    <Section title="Onboard a developer">
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          setError(undefined);
          setCreated(undefined);
          try {
            const body = { name: name.trim(), email: email.trim(), ...(payoutRef.trim() ? { payout_details_ref: payoutRef.trim() } : {}) };
            setCreated(await api.post('/v1/admin/developers', body));
            setName('');
            setEmail('');
            setPayoutRef('');
            onCreated();
          } catch (thrown) {
            setError(thrown);
          } finally {
            setBusy(false);
          }
        }}
      >
        <div className="form-grid">
          <Field label="Name">{(id) => <input id={id} value={name} onChange={(event) => setName(event.target.value)} />}</Field>
          <Field label="Email">
            {(id) => <input id={id} type="email" value={email} onChange={(event) => setEmail(event.target.value)} />}
          </Field>
          <Field label="Payout details reference" hint="Optional: a reference to details kept elsewhere, never bank details.">
            {(id, describedBy) => (
              <input id={id} value={payoutRef} aria-describedby={describedBy} onChange={(event) => setPayoutRef(event.target.value)} />
            )}
          </Field>
        </div>
        <div className="actions">
          <button type="submit" disabled={busy || !name.trim() || !email.trim()}>
            Create developer
          </button>
        </div>
        <ErrorLine error={error} />
      </form>
      {created ? (
        <div role="status">
          <p className="ok">
            Created {created.developer.name}. Their developer key, shown this once — hand it over now, it cannot be shown again:
          </p>
          <p className="secret" data-testid="new-developer-key">
            {created.key.api_key}
          </p>
        </div>
      ) : null}
    </Section>
  );
}

function SuspendButton({ developer, onDone }: { developer: Developer; onDone(): void }) {
  const api = useApi();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const action = developer.suspended ? 'unsuspend' : 'suspend';
  return (
    <>
      <button
        type="button"
        className={developer.suspended ? 'ghost' : 'danger'}
        disabled={busy}
        aria-label={`${developer.suspended ? 'Unsuspend' : 'Suspend'} ${developer.name}`}
        onClick={async () => {
          setBusy(true);
          setError(undefined);
          try {
            await api.post(`/v1/admin/developers/${developer.id}/${action}`);
            onDone();
          } catch (thrown) {
            setError(thrown);
          } finally {
            setBusy(false);
          }
        }}
      >
        {developer.suspended ? 'Unsuspend' : 'Suspend'}
      </button>
      <ErrorLine error={error} />
    </>
  );
}

export function Developers() {
  const api = useApi();
  const [cursor, setCursor] = useState<string | undefined>();
  const page = useLoad(
    () => api.get<{ data: Developer[]; next_cursor: string | null }>('/v1/admin/developers', { limit: 50, cursor }),
    [api, cursor],
  );
  return (
    <>
      <h1>Developers</h1>
      <CreateDeveloper onCreated={page.reload} />
      <Section title="All developers">
        <ErrorLine error={page.error} />
        {page.data ? (
          <>
            <ScrollTable label="Developers">
              <table>
                <caption className="sr-only">Developers, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Email</th>
                    <th scope="col">ID</th>
                    <th scope="col">State</th>
                    <th scope="col">Created</th>
                    <th scope="col">Action</th>
                  </tr>
                </thead>
                <tbody>
                  {page.data.data.map((developer) => (
                    <tr key={developer.id} data-developer={developer.id}>
                      <td>{developer.name}</td>
                      <td>{developer.email}</td>
                      <td>
                        <code>{developer.id}</code>
                      </td>
                      <td>{developer.suspended ? 'suspended' : 'active'}</td>
                      <td>{developer.created_at.slice(0, 10)}</td>
                      <td>
                        <SuspendButton developer={developer} onDone={page.reload} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
            <div className="actions">
              {cursor ? (
                <button type="button" className="ghost" onClick={() => setCursor(undefined)}>
                  First page
                </button>
              ) : null}
              {page.data.next_cursor ? (
                <button type="button" className="ghost" onClick={() => setCursor(page.data!.next_cursor!)}>
                  Next page
                </button>
              ) : null}
            </div>
          </>
        ) : page.loading ? (
          <Loading what="developers" />
        ) : null}
      </Section>
    </>
  );
}
