// /integrations: the user's sources and storage destinations
// (/api/integrations/): the plan's quota, each integration's state, and
// forms to add one (type, name, config, credentials), change it, test it,
// switch it off and on, and delete it. Config and credentials are JSON
// objects whose keys the type decides (docs/integrations.md); the server
// names any key that is wrong. Credentials are never shown again.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { date } from '../lib/format.js';
import { Text, Area, Choice, Check, Confirm, run, parseJSON } from './admin/ui.jsx';

const TYPES = [['IMAP', 'SOURCE'], ['LOCAL', 'DESTINATION'], ['WEBDAV', 'DESTINATION'], ['NEXTCLOUD', 'DESTINATION'], ['S3', 'DESTINATION'],
  ['SFTP', 'DESTINATION'], ['FTP', 'DESTINATION'], ['EMAIL', 'DESTINATION'], ['PAPERLESS', 'DESTINATION'], ['DROPBOX', 'DESTINATION'],
  ['GOOGLE_DRIVE', 'DESTINATION'], ['ONEDRIVE', 'DESTINATION']];

function IntegrationForm({ initial, submitLabel, onSubmit, onCancel, idPrefix, onTest }) {
  const [f, setF] = useState({ integration_type: initial.integration_type || 'LOCAL', name: initial.name || '',
    config: JSON.stringify(initial.config || {}, null, 2), credentials: '', is_active: initial.is_active !== false });
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const body = () => {
    const b = { name: f.name.trim(), config: parseJSON(f.config, 'config'), is_active: f.is_active };
    if (!initial.id) {
      b.integration_type = f.integration_type;
      b.direction = (TYPES.find((t) => t[0] === f.integration_type) || [])[1];
    }
    if (f.credentials.trim()) b.credentials = parseJSON(f.credentials, 'credentials');
    return b;
  };
  const submit = (e) => {
    e.preventDefault();
    let b;
    try { b = body(); } catch (err) { run(() => Promise.reject(err)); return; }
    onSubmit(b);
  };
  return (
    <form onSubmit={submit}>
      <div class="row">
        {!initial.id && <Choice label="Type" name={`${idPrefix}-type`} value={f.integration_type} onChange={set('integration_type')} options={TYPES.map((t) => [t[0], `${t[0]} (${t[1].toLowerCase()})`])} />}
        <Text label="Name" name={`${idPrefix}-name`} value={f.name} onInput={set('name')} required />
        <Check label="Active" name={`${idPrefix}-active`} checked={f.is_active} onChange={set('is_active')} />
      </div>
      <Area label="Config (JSON)" name={`${idPrefix}-config`} value={f.config} onInput={set('config')} hint='For example {"path": "/archive"}' />
      <Area label={initial.has_credentials ? 'New credentials (JSON; empty: keep the stored ones)' : 'Credentials (JSON)'} name={`${idPrefix}-credentials`}
        value={f.credentials} onInput={set('credentials')} rows={2} hint='For example {"username": "…", "password": "…"}' />
      <div class="row">
        <button type="submit">{submitLabel}</button>
        {onTest && <button type="button" class="secondary" onClick={() => { try { onTest(body()); } catch (err) { run(() => Promise.reject(err)); } }}>Test</button>}
        {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
      </div>
    </form>
  );
}

const test = (b, id) => run(() => api.post('/api/integrations/test', id ? { integration_id: id, ...b } : b),
  (r) => (r.success ? 'Test passed: ' : 'Test failed: ') + r.message);

export default function Integrations() {
  const list = useFetch(() => api.get('/api/integrations/'), []);
  const quota = useFetch(() => api.get('/api/integrations/quota/'), []);
  const [editing, setEditing] = useState(null);
  const [formKey, setFormKey] = useState(0);
  const reload = () => { list.reload(); quota.reload(); };
  const items = (list.data && (list.data.integrations || list.data)) || [];
  const q = quota.data;
  return (
    <Page title="Integrations">
      {q && <p class="muted">Plan {q.tier_name}: {q.destinations.current_count} of {q.destinations.max_allowed ?? '∞'} destinations,
        {' '}{q.sources.current_count} of {q.sources.max_allowed ?? '∞'} mail sources.</p>}
      <section aria-labelledby="integrations-h">
        <h2 id="integrations-h">Your integrations</h2>
        <Failure error={list.error} retry={list.reload} />
        {list.loading && !list.data && <Loading what="integrations" />}
        {list.data && items.length === 0 && <p class="muted">No integrations yet.</p>}
        <ul class="cards" id="integrations-list">
          {items.map((it) => (
            <li key={it.id} class="card">
              {editing === it.id ? (
                <IntegrationForm idPrefix={`integration-${it.id}`} initial={it} submitLabel="Save integration" onCancel={() => setEditing(null)}
                  onTest={(b) => test(b, it.id)}
                  onSubmit={(b) => run(() => api.put(`/api/integrations/${it.id}`, b), 'Integration saved', () => { setEditing(null); reload(); })} />
              ) : (
                <div class="row spread">
                  <div>
                    <strong>{it.name}</strong> <span class="badge">{it.integration_type}</span> <span class="muted">{it.direction.toLowerCase()}</span>
                    <div class="muted">{it.is_active ? 'active' : 'off'}{it.status && it.status.state ? ` · ${it.status.state}` : ''}
                      {it.last_used_at ? ` · last used ${date(it.last_used_at)}` : ''}</div>
                    {it.last_error && <div class="error">{it.last_error}</div>}
                  </div>
                  <div class="row">
                    <button type="button" class="secondary" aria-label={`Edit ${it.name}`} onClick={() => setEditing(it.id)}>Edit</button>
                    <button type="button" class="secondary" aria-label={`Test ${it.name}`} onClick={() => test({}, it.id)}>Test</button>
                    <Confirm question={`Delete the integration ${it.name}?`} label={`Delete ${it.name}`}
                      onConfirm={() => run(() => api.del(`/api/integrations/${it.id}`), 'Integration deleted', reload)}>Delete</Confirm>
                  </div>
                </div>
              )}
            </li>
          ))}
        </ul>
      </section>
      <section aria-labelledby="new-integration-h">
        <h2 id="new-integration-h">New integration</h2>
        <IntegrationForm key={formKey} idPrefix="new-integration" initial={{}} submitLabel="Add integration" onTest={(b) => test(b)}
          onSubmit={(b) => run(() => api.post('/api/integrations/', b), 'Integration added', () => { setFormKey(formKey + 1); reload(); })} />
      </section>
    </Page>
  );
}
