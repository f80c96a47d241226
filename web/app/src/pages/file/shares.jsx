// Shares: who else sees the document and in which role. The owner (or an
// administrator) adds people, changes a role and removes a share; everyone
// else sees the list read-only (GET …/shared-with).
import { useState } from 'preact/hooks';
import { api } from '../../lib/api.js';
import { useFetch } from '../../lib/use.js';
import { notify } from '../../components/notices.jsx';
import { Failure } from '../../components/page.jsx';

export function Shares({ fileID, canShare, sharedWith, reloadSharedWith }) {
  const shares = useFetch(() => (canShare ? api.get(`/api/files/${fileID}/shares`) : Promise.resolve(null)), [fileID, canShare]);
  const [user, setUser] = useState('');
  const [role, setRole] = useState('viewer');
  const [suggest, setSuggest] = useState([]);
  const [busy, setBusy] = useState(false);

  const reload = () => {
    shares.reload();
    reloadSharedWith();
  };
  const act = async (what, fn) => {
    setBusy(true);
    try {
      await fn();
      reload();
    } catch (err) {
      notify(what + ' failed: ' + (err.detail || err.message), 'error');
    } finally {
      setBusy(false);
    }
  };
  const lookup = async (q) => {
    setUser(q);
    if (q.trim().length < 2) return setSuggest([]);
    try {
      const r = await api.get('/api/users/search', { q: q.trim(), limit: 8 });
      setSuggest((r && r.users) || []);
    } catch {
      setSuggest([]);
    }
  };
  const add = (e) => {
    e.preventDefault();
    if (!user.trim()) return;
    act('Sharing', async () => {
      await api.post(`/api/files/${fileID}/shares`, { shared_with_user_id: user.trim(), role });
      notify(`Shared with ${user.trim()} as ${role}`);
      setUser('');
    });
  };

  if (!canShare) {
    const list = sharedWith || [];
    return list.length === 0 ? (
      <p class="muted">Not shared with anyone.</p>
    ) : (
      <ul class="plain">
        {list.map((s) => (
          <li key={s.share_id}>{s.display_name || s.user_id} <span class="muted">({s.user_id})</span> · {s.role}</li>
        ))}
      </ul>
    );
  }
  const list = shares.data || [];
  return (
    <div>
      <Failure error={shares.error} retry={shares.reload} />
      {list.length === 0 && !shares.loading && <p class="muted">Not shared with anyone.</p>}
      {list.length > 0 && (
        <ul class="plain shares">
          {list.map((s) => (
            <li key={s.id} class="row">
              <span class="share-user">{s.shared_with_user_id}</span>
              <label class="sr" for={'role-' + s.id}>Role of {s.shared_with_user_id}</label>
              <select id={'role-' + s.id} value={s.role} disabled={busy}
                onChange={(e) => { const r = e.currentTarget.value; act('Changing the role', () => api.put(`/api/files/${fileID}/shares/${s.id}`, { role: r })); }}>
                <option value="viewer">viewer</option>
                <option value="editor">editor</option>
              </select>
              <button type="button" class="link" disabled={busy} onClick={() => act('Removing the share', () => api.del(`/api/files/${fileID}/shares/${s.id}`))}>
                Remove<span class="sr"> {s.shared_with_user_id}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <form class="row share-form" onSubmit={add}>
        <div class="field">
          <label for="share-user">Share with</label>
          <input id="share-user" type="text" list="share-users" autocomplete="off" value={user} onInput={(e) => lookup(e.currentTarget.value)} placeholder="user name or e-mail" />
          <datalist id="share-users">{suggest.map((u) => <option key={u} value={u} />)}</datalist>
        </div>
        <div class="field">
          <label for="share-role">Role</label>
          <select id="share-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            <option value="viewer">viewer</option>
            <option value="editor">editor</option>
          </select>
        </div>
        <button type="submit" disabled={busy || !user.trim()}>Share</button>
      </form>
    </div>
  );
}
