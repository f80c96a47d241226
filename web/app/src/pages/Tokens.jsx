// /tokens: the signed-in user's API tokens (/api/api-tokens/): create one
// (its secret is shown once), revoke an active one, delete a revoked one,
// reactivate a revoked one.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { date } from '../lib/format.js';
import { Text, Confirm, run } from './admin/ui.jsx';

function NewToken({ onCreated }) {
  const [name, setName] = useState('');
  const [days, setDays] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    const body = { name: name.trim() };
    if (days.trim()) body.expires_in_days = Number(days);
    const t = await run(() => api.post('/api/api-tokens/', body), (r) => `Token ${r.name} created`);
    if (t) {
      setName('');
      setDays('');
      onCreated(t);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-token-h">
      <h2 id="new-token-h">New token</h2>
      <div class="row">
        <Text label="Name" name="token-name" value={name} onInput={setName} required maxLength={100} />
        <Text label="Expires after (days, 1–3650; empty: never)" name="token-days" type="number" min="1" max="3650" value={days} onInput={setDays} />
        <button type="submit">Create token</button>
      </div>
    </form>
  );
}

export default function Tokens() {
  const list = useFetch(() => api.get('/api/api-tokens/'), []);
  const [fresh, setFresh] = useState(null);
  const act = (t, how) => {
    if (how === 'reactivate') {
      return run(() => api.post(`/api/api-tokens/${t.id}/reactivate`), `Token ${t.name} reactivated`, list.reload);
    }
    return run(() => api.del(`/api/api-tokens/${t.id}`), (r) => (r && r.detail) || 'Done', list.reload);
  };
  const copy = () => navigator.clipboard && navigator.clipboard.writeText(fresh.token).then(() => run(async () => {}, 'Copied'));
  return (
    <Page title="API tokens">
      <p class="muted">Scripts, the mobile app and automation platforms sign in with a token: <code>Authorization: Bearer dfl_…</code>. A token has your rights.</p>
      <NewToken onCreated={(t) => { setFresh(t); list.reload(); }} />
      {fresh && (
        <section class="card" role="alert" aria-labelledby="fresh-h">
          <h2 id="fresh-h">Your new token {fresh.name}</h2>
          <p>Copy it now: it is not shown again.</p>
          <p><code id="new-token-value">{fresh.token}</code></p>
          <div class="row">
            <button type="button" onClick={copy}>Copy</button>
            <button type="button" class="secondary" onClick={() => setFresh(null)}>Done</button>
          </div>
        </section>
      )}
      <section aria-labelledby="tokens-h">
        <h2 id="tokens-h">Your tokens</h2>
        <Failure error={list.error} retry={list.reload} />
        {list.loading && !list.data && <Loading what="tokens" />}
        {list.data && (list.data.length === 0 ? <p class="muted">No tokens yet.</p> : (
          <div class="table-wrap">
            <table id="tokens-table">
              <thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">State</th><th scope="col">Last used</th>
                <th scope="col">Created</th><th scope="col">Expires</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
              <tbody>
                {list.data.map((t) => (
                  <tr key={t.id}>
                    <td>{t.name}</td>
                    <td><code>{t.token_prefix}…</code></td>
                    <td class={t.is_active ? 'ok' : 'muted'}>{t.is_active ? 'active' : 'revoked'}</td>
                    <td>{t.last_used_at ? `${date(t.last_used_at)}${t.last_used_ip ? ' from ' + t.last_used_ip : ''}` : 'never'}</td>
                    <td>{date(t.created_at)}</td>
                    <td>{t.expires_at ? date(t.expires_at) : 'never'}</td>
                    <td class="actions">
                      {t.is_active ? (
                        <Confirm question={`Revoke the token ${t.name}? Whatever uses it stops working.`} onConfirm={() => act(t, 'revoke')}
                          label={`Revoke ${t.name}`}>Revoke</Confirm>
                      ) : (
                        <>
                          <button type="button" class="secondary" aria-label={`Reactivate ${t.name}`} onClick={() => act(t, 'reactivate')}>Reactivate</button>
                          <Confirm question={`Delete the revoked token ${t.name} for good?`} onConfirm={() => act(t, 'delete')}
                            label={`Delete ${t.name}`}>Delete</Confirm>
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ))}
      </section>
    </Page>
  );
}
