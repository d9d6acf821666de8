/**
 * End users: spend, requests and balance per user across the developer's apps (each named by its
 * opaque user_ref, never a raw id), filtered by app, a page at a time; revoking every live session
 * of a listed user from their row (by user_ref), or of a user of an app by the id the developer's
 * own backend knows them by.
 */
import { type FormEvent, useState } from 'react';
import { href } from '../../router.ts';
import { useApi } from '../../session.tsx';
import { useLoad } from '../../ui/load.ts';
import { ErrorLine, Field, Loading, Outcome, Section, usd } from '../../ui/parts.tsx';
import { type Action, useAction } from '../../ui/useAction.ts';
import type { App, Page } from './types.ts';
import { ScrollTable } from '../../ui/scroll-table.tsx';

interface EndUser {
  user_ref: string;
  app: string;
  spend_usd: string;
  requests: number;
  balance_usd: string;
  last_seen_at: string;
}

const sessionsRevoked = (count: number) => (count === 1 ? '1 session revoked' : `${count} sessions revoked`);

/** The row's button: asks first, then revokes the user's sessions by user_ref; the outcome shows under the table. */
function RevokeRowButton({ user, action }: { user: EndUser; action: Action }) {
  const api = useApi();
  const short = `${user.user_ref.slice(0, 12)}…`;
  async function revoke() {
    if (!window.confirm(`Revoke every live session of user ${short}? Their next call is refused until your backend mints a new session.`)) {
      return;
    }
    let revoked = 0;
    await action.run(
      async () => {
        const result = await api.post<{ revoked_sessions: number }>(
          `/v1/developer/end-users/${encodeURIComponent(user.user_ref)}/revoke-sessions`,
        );
        revoked = result.revoked_sessions;
      },
      () => `${sessionsRevoked(revoked)} for user ${short}`,
    );
  }
  return (
    <button type="button" className="danger" disabled={action.busy} onClick={revoke}>
      Revoke sessions<span className="sr-only"> of user {short}</span>
    </button>
  );
}

function RevokeSessions({ apps }: { apps: App[] }) {
  const api = useApi();
  const action = useAction();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const app = String(form.get('app') ?? '');
    const externalUserId = String(form.get('external_user_id') ?? '').trim();
    let revoked = 0;
    const ok = await action.run(
      async () => {
        const result = await api.post<{ revoked_sessions: number }>(`/v1/developer/apps/${encodeURIComponent(app)}/users/revoke-sessions`, {
          external_user_id: externalUserId,
        });
        revoked = result.revoked_sessions;
      },
      () => `${sessionsRevoked(revoked)}.`,
    );
    if (ok) element.reset();
  }
  return (
    <Section title="Revoke sessions by your user id">
      <form onSubmit={submit} aria-label="Revoke sessions">
        <div className="form-grid">
          <Field label="App">
            {(id) => (
              <select id={id} name="app">
                {apps.map((app) => (
                  <option key={app.public_app_id} value={app.public_app_id}>
                    {app.name} ({app.public_app_id})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Your user id" hint="The external_user_id your backend sends to POST /v1/sessions">
            {(id, hint) => <input id={id} name="external_user_id" autoComplete="off" aria-describedby={hint} />}
          </Field>
        </div>
        <Outcome error={action.error} done={action.done} />
        <button type="submit" className="danger" disabled={action.busy || apps.length === 0}>
          Revoke sessions
        </button>
      </form>
    </Section>
  );
}

export function EndUsers() {
  const api = useApi();
  const apps = useLoad(() => api.get<Page<App>>('/v1/developer/apps', { limit: 100 }), [api]);
  const [app, setApp] = useState('');
  const [cursors, setCursors] = useState<string[]>([]);
  const revoke = useAction();
  const cursor = cursors.at(-1);
  const users = useLoad(
    () => api.get<Page<EndUser>>('/v1/developer/end-users', { limit: 50, app: app || undefined, cursor }),
    [api, app, cursor],
  );
  return (
    <>
      <h1>End users</h1>
      <Section title="Spend and balance per user">
        <Field label="App">
          {(id) => (
            <select
              id={id}
              value={app}
              onChange={(event) => {
                setApp(event.target.value);
                setCursors([]);
              }}
            >
              <option value="">All apps</option>
              {(apps.data?.data ?? []).map((one) => (
                <option key={one.public_app_id} value={one.public_app_id}>
                  {one.name}
                </option>
              ))}
            </select>
          )}
        </Field>
        <ErrorLine error={users.error ?? apps.error} />
        <Outcome error={revoke.error} done={revoke.done} />
        {users.data ? (
          users.data.data.length ? (
            <ScrollTable label="End users">
              <table aria-label="End users">
                <thead>
                  <tr>
                    <th scope="col">User (user_ref)</th>
                    <th scope="col">App</th>
                    <th scope="col" className="num">
                      Requests
                    </th>
                    <th scope="col" className="num">
                      Spend
                    </th>
                    <th scope="col" className="num">
                      Balance
                    </th>
                    <th scope="col">Last seen</th>
                    <th scope="col">Calls</th>
                    <th scope="col">Sessions</th>
                  </tr>
                </thead>
                <tbody>
                  {users.data.data.map((user) => (
                    <tr key={`${user.app}/${user.user_ref}`}>
                      <th scope="row">
                        <code className="user-ref">{user.user_ref}</code>
                      </th>
                      <td>{user.app}</td>
                      <td className="num">{user.requests}</td>
                      <td className="num">{usd(user.spend_usd)}</td>
                      <td className="num">{usd(user.balance_usd)}</td>
                      <td>{user.last_seen_at.slice(0, 16).replace('T', ' ')}</td>
                      <td>
                        <a href={href(`/developer/calls?user_ref=${encodeURIComponent(user.user_ref)}`)}>
                          Calls<span className="sr-only"> of user {user.user_ref.slice(0, 12)}…</span>
                        </a>
                      </td>
                      <td>
                        <RevokeRowButton user={user} action={revoke} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </ScrollTable>
          ) : (
            <p className="muted">No end users yet.</p>
          )
        ) : users.loading ? (
          <Loading what="end users" />
        ) : null}
        <div className="actions">
          <button type="button" className="ghost" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous page
          </button>
          <button
            type="button"
            className="ghost"
            disabled={!users.data?.next_cursor}
            onClick={() => users.data?.next_cursor && setCursors([...cursors, users.data.next_cursor])}
          >
            Next page
          </button>
        </div>
      </Section>
      <RevokeSessions apps={(apps.data?.data ?? []).filter((one) => !one.archived_at)} />
    </>
  );
}
