// The search box and the filters of the documents page. Changes are kept
// in a draft until the form is submitted (Enter or "Apply"), except the
// selects and check boxes, which apply at once.
import { useEffect, useState } from 'preact/hooks';
import { statuses, types, defaults } from './query.js';
import { session } from '../../lib/session.js';

export function Filters({ state, onChange }) {
  const [draft, setDraft] = useState(state);
  useEffect(() => setDraft(state), [JSON.stringify(state)]);
  const set = (k) => (e) => setDraft({ ...draft, [k]: e.currentTarget.value });
  const apply = (next) => onChange({ ...next, page: '1' });
  const now = (k) => (e) => apply({ ...draft, [k]: e.currentTarget.type === 'checkbox' ? (e.currentTarget.checked ? '1' : '') : e.currentTarget.value });
  const submit = (e) => {
    e.preventDefault();
    apply(draft);
  };
  const searching = draft.q.trim() !== '';
  return (
    <form class="filters card" role="search" onSubmit={submit}>
      <div class="search-row">
        <label for="f-q" class="sr">Search the documents</label>
        <input id="f-q" type="search" placeholder="Search text, titles, file names, tags…" value={draft.q} onInput={set('q')} maxLength={512} />
        <button type="submit">Search</button>
      </div>
      <div class="row">
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" value={draft.status} onChange={now('status')} disabled={searching} title={searching ? 'Full-text search does not filter by status' : undefined}>
            <option value="">Any</option>
            {statuses.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="f-type">Type</label>
          <select id="f-type" value={draft.type} onChange={now('type')}>
            <option value="">Any</option>
            {types.map(([v, l]) => <option key={v} value={v}>{l}</option>)}
          </select>
        </div>
        <div class="field">
          <label for="f-from">From</label>
          <input id="f-from" type="date" value={draft.from} onChange={now('from')} />
        </div>
        <div class="field">
          <label for="f-to">To</label>
          <input id="f-to" type="date" value={draft.to} onChange={now('to')} />
        </div>
        <div class="field">
          <label for="f-tags">Tags</label>
          <input id="f-tags" type="text" placeholder="tax, 2026" value={draft.tags} onInput={set('tags')} aria-describedby="f-tags-help" />
          <span id="f-tags-help" class="sr">Comma-separated; documents having all of them</span>
        </div>
        {!session.single_user && (
          <div class="field">
            <label for="f-owner">Owner</label>
            <input id="f-owner" type="text" value={draft.owner} onInput={set('owner')} disabled={searching || draft.shared !== ''} />
          </div>
        )}
        {!session.single_user && (
          <label class="check">
            <input type="checkbox" checked={draft.shared !== ''} onChange={now('shared')} disabled={searching} /> Shared with me
          </label>
        )}
        <button type="submit" class="secondary">Apply</button>
        <button type="button" class="link" onClick={() => onChange({ ...defaults })}>Clear</button>
      </div>
    </form>
  );
}
