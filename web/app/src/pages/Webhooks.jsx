// /webhooks (administrators): the webhooks (/api/webhooks/) with their
// delivery logs — create, edit, pause, delete, send a delivery again — and
// the automation hooks platforms subscribed with an API token
// (/api/automation/hooks), whose routes take a bearer token only: the page
// asks for one of the user's tokens, keeps it in memory for the visit and
// never stores it.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { date } from '../lib/format.js';
import { Text, Check, Confirm, DeliveryLog, Pager, run } from './admin/ui.jsx';

function Events({ all, value, onChange, legend, idPrefix }) {
  return (
    <fieldset class="events">
      <legend>{legend}</legend>
      {(all || []).map((ev) => (
        <Check key={ev} name={`${idPrefix}-${ev}`} label={ev} checked={value.includes(ev)}
          onChange={(on) => onChange(on ? [...value, ev] : value.filter((x) => x !== ev))} />
      ))}
    </fieldset>
  );
}

function WebhookForm({ initial, events, submitLabel, onSubmit, onCancel, idPrefix }) {
  const [w, setW] = useState({ url: initial.url || '', description: initial.description || '', events: initial.events || [],
    is_active: initial.is_active !== false, secret: '' });
  const set = (k) => (v) => setW({ ...w, [k]: v });
  const submit = (e) => {
    e.preventDefault();
    const body = { url: w.url.trim(), description: w.description, events: w.events, is_active: w.is_active };
    if (w.secret) body.secret = w.secret;
    onSubmit(body);
  };
  return (
    <form onSubmit={submit}>
      <div class="row">
        <Text label="URL" name={`${idPrefix}-url`} type="url" value={w.url} onInput={set('url')} required placeholder="https://…" />
        <Text label="Description" name={`${idPrefix}-description`} value={w.description} onInput={set('description')} />
        <Text label={initial.has_secret ? 'New secret (empty: keep the current one)' : 'Secret (signs each delivery)'} name={`${idPrefix}-secret`}
          type="password" autocomplete="new-password" value={w.secret} onInput={set('secret')} />
        <Check label="Active" name={`${idPrefix}-active`} checked={w.is_active} onChange={set('is_active')} />
      </div>
      <Events all={events} value={w.events} onChange={set('events')} legend="Events" idPrefix={idPrefix} />
      <div class="row">
        <button type="submit">{submitLabel}</button>
        {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
      </div>
    </form>
  );
}

// Deliveries pages a webhook's (or hook's) delivery log.
function Deliveries({ path, get, canRedeliver }) {
  const [page, setPage] = useState(1);
  const log = useFetch(() => get(path, { page, per_page: 20 }), [path, page]);
  const redeliver = canRedeliver && ((d) => run(() => api.post(`${path}/${d.id}/redeliver`), 'Delivery queued again', log.reload));
  return (
    <div>
      <Failure error={log.error} retry={log.reload} />
      {log.loading && !log.data && <Loading what="deliveries" />}
      {log.data && <DeliveryLog data={log.data} redeliver={redeliver} />}
      {log.data && <Pager page={log.data.page} pages={log.data.pages} total={log.data.total} onPage={setPage} what="deliveries" />}
    </div>
  );
}

function WebhookList({ events }) {
  const hooks = useFetch(() => api.get('/api/webhooks/'), []);
  const [editing, setEditing] = useState(null);
  const [logOf, setLogOf] = useState(null);
  const [formKey, setFormKey] = useState(0);
  const list = hooks.data || [];
  return (
    <section aria-labelledby="webhooks-h">
      <h2 id="webhooks-h">Webhooks</h2>
      <Failure error={hooks.error} retry={hooks.reload} />
      {hooks.loading && !hooks.data && <Loading what="webhooks" />}
      {hooks.data && list.length === 0 && <p class="muted">No webhooks yet.</p>}
      <ul class="cards" id="webhooks-list">
        {list.map((w) => (
          <li key={w.id} class="card">
            {editing === w.id ? (
              <WebhookForm idPrefix={`webhook-${w.id}`} initial={w} events={events} submitLabel="Save webhook" onCancel={() => setEditing(null)}
                onSubmit={(body) => run(() => api.put(`/api/webhooks/${w.id}`, body), 'Webhook saved', () => { setEditing(null); return hooks.reload(); })} />
            ) : (
              <>
                <div class="row spread">
                  <div>
                    <code class="webhook-url">{w.url}</code>
                    {w.description && <div>{w.description}</div>}
                    <div class="muted">
                      {w.is_active ? 'active' : 'paused'} · {w.has_secret ? 'signed' : 'unsigned'} · since {date(w.created_at)}
                      {w.failing && <span class="error"> · failing since {date(w.failing_since)}</span>}
                    </div>
                    <div>{(w.events || []).map((e) => <span key={e} class="chip">{e}</span>)}</div>
                  </div>
                  <div class="row">
                    <button type="button" class="secondary" aria-label={`Edit ${w.url}`} onClick={() => setEditing(w.id)}>Edit</button>
                    <button type="button" class="secondary" aria-label={`${w.is_active ? 'Pause' : 'Resume'} ${w.url}`}
                      onClick={() => run(() => api.put(`/api/webhooks/${w.id}`, { is_active: !w.is_active }), w.is_active ? 'Webhook paused' : 'Webhook resumed', hooks.reload)}>
                      {w.is_active ? 'Pause' : 'Resume'}</button>
                    <button type="button" class="secondary" aria-expanded={logOf === w.id ? 'true' : 'false'} aria-label={`Deliveries of ${w.url}`}
                      onClick={() => setLogOf(logOf === w.id ? null : w.id)}>Deliveries</button>
                    <Confirm question={`Delete the webhook ${w.url}?`} label={`Delete ${w.url}`}
                      onConfirm={() => run(() => api.del(`/api/webhooks/${w.id}`), 'Webhook deleted', hooks.reload)}>Delete</Confirm>
                  </div>
                </div>
                {logOf === w.id && <Deliveries path={`/api/webhooks/${w.id}/deliveries`} get={api.get} canRedeliver />}
              </>
            )}
          </li>
        ))}
      </ul>
      <h3>New webhook</h3>
      <WebhookForm key={formKey} idPrefix="new-webhook" initial={{ events: [] }} events={events} submitLabel="Add webhook"
        onSubmit={(body) => run(() => api.post('/api/webhooks/', body), 'Webhook added', () => { setFormKey(formKey + 1); return hooks.reload(); })} />
    </section>
  );
}

// HookList shows the automation hooks a token sees (its owner's; an
// administrator's token reads any hook by id, and lists its own).
function HookList() {
  const [token, setToken] = useState('');
  const [used, setUsed] = useState('');
  const [logOf, setLogOf] = useState(null);
  const bearer = { headers: { Authorization: `Bearer ${used}` } };
  const get = (path, query) => api.get(path, query, bearer);
  const hooks = useFetch(() => (used ? get('/api/automation/hooks') : Promise.resolve(null)), [used]);
  const list = (hooks.data && (hooks.data.hooks || hooks.data)) || [];
  return (
    <section aria-labelledby="hooks-h">
      <h2 id="hooks-h">Automation hooks</h2>
      <p class="muted">Zapier, Make and n8n subscribe to events with an API token, and their hooks are reached with one: enter one of your tokens
        (see <a href="/tokens">API tokens</a>) to see your hooks and their deliveries. The token stays in this page until you leave it.</p>
      <form class="row" onSubmit={(e) => { e.preventDefault(); setUsed(token.trim()); }}>
        <Text label="API token" name="hooks-token" type="password" autocomplete="off" value={token} onInput={setToken} required />
        <button type="submit">Show hooks</button>
      </form>
      <Failure error={hooks.error} retry={hooks.reload} />
      {used && hooks.data && list.length === 0 && <p class="muted">This token's user has no hooks.</p>}
      <ul class="cards">
        {list.map((h) => (
          <li key={h.id} class="card">
            <div class="row spread">
              <div>
                <code>{h.target_url}</code> <span class="badge">{h.hook_type}</span>
                <div class="muted">{h.is_active ? 'active' : 'paused'} · {h.has_secret ? 'signed' : 'unsigned'} · since {date(h.created_at)}</div>
                <div>{(h.events || []).map((e) => <span key={e} class="chip">{e}</span>)}</div>
              </div>
              <div class="row">
                <button type="button" class="secondary" aria-label={`${h.is_active ? 'Pause' : 'Resume'} ${h.target_url}`}
                  onClick={() => run(() => api.put(`/api/automation/hooks/${h.id}`, { is_active: !h.is_active }, bearer), h.is_active ? 'Hook paused' : 'Hook resumed', hooks.reload)}>
                  {h.is_active ? 'Pause' : 'Resume'}</button>
                <button type="button" class="secondary" aria-expanded={logOf === h.id ? 'true' : 'false'} aria-label={`Deliveries of ${h.target_url}`}
                  onClick={() => setLogOf(logOf === h.id ? null : h.id)}>Deliveries</button>
                <Confirm question={`Unsubscribe the hook ${h.target_url}?`} label={`Unsubscribe ${h.target_url}`}
                  onConfirm={() => run(() => api.del(`/api/automation/hooks/${h.id}`, bearer), 'Hook removed', hooks.reload)}>Unsubscribe</Confirm>
              </div>
            </div>
            {logOf === h.id && <Deliveries path={`/api/automation/hooks/${h.id}/deliveries`} get={get} />}
          </li>
        ))}
      </ul>
    </section>
  );
}

export default function Webhooks() {
  const events = useFetch(() => api.get('/api/webhooks/events/'), []);
  return (
    <Page title="Webhooks and hooks">
      <p class="muted">docflow posts each chosen event to these addresses, signed with the secret, and retries failed deliveries.</p>
      <WebhookList events={events.data || []} />
      <HookList />
    </Page>
  );
}
