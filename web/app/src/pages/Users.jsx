// /users (administrators): user profiles (/api/admin/users: search, the
// daily upload limit, blocking, the plan, notes) and local accounts
// (/api/admin/users/local: create, activate, make administrator).
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { date } from '../lib/format.js';
import { Text, Choice, Check, Confirm, Pager, run } from './admin/ui.jsx';

const TIERS = ['free', 'starter', 'professional', 'power'];

function ProfileForm({ u, onSaved, onCancel }) {
  const [f, setF] = useState({ display_name: u.display_name || '', daily_upload_limit: u.daily_upload_limit == null ? '' : String(u.daily_upload_limit),
    is_blocked: u.is_blocked, subscription_tier: u.subscription_tier || 'free', notes: u.notes || '' });
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const submit = (e) => {
    e.preventDefault();
    const body = { display_name: f.display_name || null, notes: f.notes || null, is_blocked: f.is_blocked, subscription_tier: f.subscription_tier,
      daily_upload_limit: f.daily_upload_limit === '' ? null : Number(f.daily_upload_limit) };
    run(() => api.put(`/api/admin/users/${encodeURIComponent(u.user_id)}`, body), `${u.user_id} saved`, onSaved);
  };
  const p = `user-${u.profile_id || u.user_id}`;
  return (
    <form class="row" onSubmit={submit}>
      <Text label="Display name" name={`${p}-name`} value={f.display_name} onInput={set('display_name')} />
      <Text label="Daily upload limit (empty: default; 0: none)" name={`${p}-limit`} type="number" min="0" value={f.daily_upload_limit} onInput={set('daily_upload_limit')} />
      <Choice label="Plan" name={`${p}-tier`} value={f.subscription_tier} onChange={set('subscription_tier')} options={TIERS} />
      <Text label="Notes" name={`${p}-notes`} value={f.notes} onInput={set('notes')} />
      <Check label="Blocked from uploading" name={`${p}-blocked`} checked={f.is_blocked} onChange={set('is_blocked')} />
      <button type="submit">Save</button>
      <button type="button" class="secondary" onClick={onCancel}>Cancel</button>
    </form>
  );
}

function Profiles() {
  const [q, setQ] = useState('');
  const [query, setQuery] = useState('');
  const [page, setPage] = useState(1);
  const [editing, setEditing] = useState(null);
  const list = useFetch(() => api.get('/api/admin/users', { q: query, page, per_page: 25 }), [query, page]);
  const users = (list.data && list.data.users) || [];
  return (
    <section aria-labelledby="profiles-h">
      <h2 id="profiles-h">Users</h2>
      <form class="row" role="search" onSubmit={(e) => { e.preventDefault(); setPage(1); setQuery(q.trim()); }}>
        <Text label="Find a user (id or name)" name="user-q" type="search" value={q} onInput={setQ} />
        <button type="submit">Search</button>
      </form>
      <Failure error={list.error} retry={list.reload} />
      {list.loading && !list.data && <Loading what="users" />}
      {list.data && (users.length === 0 ? <p class="muted">No user matches.</p> : (
        <div class="table-wrap">
          <table id="users-table">
            <thead><tr><th scope="col">User</th><th scope="col">Plan</th><th scope="col" class="num">Documents</th><th scope="col">Last upload</th>
              <th scope="col">Uploads</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              {users.map((u) => (editing === u.user_id ? (
                <tr key={u.user_id}><td colSpan={6}><strong>{u.user_id}</strong>
                  <ProfileForm u={u} onCancel={() => setEditing(null)} onSaved={() => { setEditing(null); return list.reload(); }} /></td></tr>
              ) : (
                <tr key={u.user_id}>
                  <td>{u.display_name || u.user_id}{u.display_name && <div class="muted">{u.user_id}</div>}{u.notes && <div class="muted">{u.notes}</div>}</td>
                  <td>{u.subscription_tier}</td>
                  <td class="num">{u.document_count}</td>
                  <td>{date(u.last_upload)}</td>
                  <td>{u.is_blocked ? <span class="error">blocked</span> : u.daily_upload_limit == null ? 'default limit' : u.daily_upload_limit === 0 ? 'unlimited' : `${u.daily_upload_limit} a day`}</td>
                  <td><button type="button" class="secondary" aria-label={`Edit ${u.user_id}`} onClick={() => setEditing(u.user_id)}>Edit</button></td>
                </tr>
              )))}
            </tbody>
          </table>
        </div>
      ))}
      {list.data && <Pager page={list.data.page} pages={list.data.pages} total={list.data.total} onPage={setPage} what="users" />}
    </section>
  );
}

function LocalAccounts() {
  const list = useFetch(() => api.get('/api/admin/users/local'), []);
  const [f, setF] = useState({ email: '', username: '', display_name: '', password: '', is_admin: false });
  const set = (k) => (v) => setF({ ...f, [k]: v });
  const accounts = (list.data && (list.data.users || list.data)) || [];
  const create = (e) => {
    e.preventDefault();
    run(() => api.post('/api/admin/users/local', { ...f, is_active: true }), `Account ${f.email} created`, () => {
      setF({ email: '', username: '', display_name: '', password: '', is_admin: false });
      return list.reload();
    });
  };
  const patch = (a, body, what) => run(() => api.patch(`/api/admin/users/local/${a.id}`, body), what, list.reload);
  return (
    <section aria-labelledby="local-h">
      <h2 id="local-h">Local accounts</h2>
      <Failure error={list.error} retry={list.reload} />
      {list.data && (accounts.length === 0 ? <p class="muted">No local accounts.</p> : (
        <div class="table-wrap">
          <table id="local-table">
            <thead><tr><th scope="col">E-mail</th><th scope="col">User name</th><th scope="col">Name</th><th scope="col">Active</th>
              <th scope="col">Administrator</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              {accounts.map((a) => (
                <tr key={a.id}>
                  <td>{a.email}</td><td>{a.username}</td><td>{a.display_name}</td>
                  <td><Check label={<span class="sr">Active: {a.email}</span>} checked={a.is_active} onChange={(v) => patch(a, { is_active: v }, `${a.email} ${v ? 'activated' : 'deactivated'}`)} /></td>
                  <td><Check label={<span class="sr">Administrator: {a.email}</span>} checked={a.is_admin} onChange={(v) => patch(a, { is_admin: v }, `${a.email} saved`)} /></td>
                  <td><Confirm question={`Delete the account ${a.email}?`} label={`Delete ${a.email}`}
                    onConfirm={() => run(() => api.del(`/api/admin/users/local/${a.id}`), 'Account deleted', list.reload)}>Delete</Confirm></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      <h3>New local account</h3>
      <form class="row" onSubmit={create}>
        <Text label="E-mail" name="local-email" type="email" value={f.email} onInput={set('email')} required />
        <Text label="User name" name="local-username" value={f.username} onInput={set('username')} />
        <Text label="Display name" name="local-display" value={f.display_name} onInput={set('display_name')} />
        <Text label="Password (8 characters or more)" name="local-password" type="password" autocomplete="new-password" minLength={8} value={f.password} onInput={set('password')} required />
        <Check label="Administrator" name="local-admin" checked={f.is_admin} onChange={set('is_admin')} />
        <button type="submit">Create account</button>
      </form>
    </section>
  );
}

export default function Users() {
  return (
    <Page title="Users">
      <Profiles />
      <LocalAccounts />
    </Page>
  );
}
