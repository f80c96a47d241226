// /audit (administrators): the audit log (/api/admin/audit-log), newest
// first, filtered by actor, action and time, a page at a time.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { date } from '../lib/format.js';
import { Text, Pager } from './admin/ui.jsx';

export default function Audit() {
  const [form, setForm] = useState({ actor: '', action: '', from: '', to: '' });
  const [filter, setFilter] = useState({});
  const [page, setPage] = useState(1);
  const set = (k) => (v) => setForm({ ...form, [k]: v });
  const log = useFetch(() => api.get('/api/admin/audit-log', { ...filter, page, per_page: 50 }), [filter, page]);
  const entries = (log.data && log.data.entries) || [];
  return (
    <Page title="Audit log">
      <form class="row card" role="search" aria-label="Filter the audit log" onSubmit={(e) => {
        e.preventDefault();
        setPage(1);
        setFilter({ actor: form.actor.trim(), action: form.action.trim(), from: form.from, to: form.to });
      }}>
        <Text label="Actor" name="audit-actor" value={form.actor} onInput={set('actor')} />
        <Text label="Action" name="audit-action" value={form.action} onInput={set('action')} placeholder="file.delete" />
        <Text label="From" name="audit-from" type="date" value={form.from} onInput={set('from')} />
        <Text label="To" name="audit-to" type="date" value={form.to} onInput={set('to')} />
        <button type="submit">Filter</button>
      </form>
      <Failure error={log.error} retry={log.reload} />
      {log.loading && !log.data && <Loading what="the audit log" />}
      {log.data && (entries.length === 0 ? <p class="muted">No entries.</p> : (
        <div class="table-wrap">
          <table id="audit-table">
            <thead><tr><th scope="col">When</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th>
              <th scope="col">Detail</th><th scope="col">Address</th></tr></thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id}>
                  <td>{date(e.at)}</td><td>{e.actor}</td><td><code>{e.action}</code></td><td>{e.target}</td><td>{e.detail}</td><td>{e.client_ip}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ))}
      {log.data && <Pager page={log.data.page} pages={log.data.pages} total={log.data.total} onPage={setPage} what="entries" />}
    </Page>
  );
}
