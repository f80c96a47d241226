// / — the documents: search, filters, sorting and paging (kept in the
// address), live status of documents in progress (the list is read again
// every 2 s while any is pending or processing), drag-and-drop upload and
// the bulk actions.
import { useLocation } from 'preact-iso';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch, useInterval } from '../lib/use.js';
import { readState, toURL, toListQuery, toSearchQuery, inProgress } from './documents/query.js';
import { Filters } from './documents/filters.jsx';
import { FileTable, SearchResults, Pager } from './documents/table.jsx';
import { Upload } from './documents/upload.jsx';
import { BulkBar } from './documents/bulk.jsx';

export default function Documents() {
  const loc = useLocation();
  const state = useMemo(() => readState(loc.query), [loc.url]);
  const searching = state.q.trim() !== '';
  const [selected, setSelected] = useState(new Set());
  const list = useFetch(
    () => (searching ? api.get('/api/search', toSearchQuery(state)) : api.get('/api/files', toListQuery(state))),
    [loc.url],
  );
  const pipelines = useFetch(() => api.get('/api/pipelines').catch(() => []), []);
  // The moment the list first shows, for the first-load measurement
  // (performance.getEntriesByName('docflow-documents')).
  const shown = !!list.data;
  useEffect(() => {
    if (shown && performance.getEntriesByName('docflow-documents').length === 0) performance.mark('docflow-documents');
  }, [shown]);

  const go = (next) => loc.route(toURL(next));
  // After an upload the list is read again for a while even before the
  // new documents show (they are recorded as the intake takes them in).
  const [burstUntil, setBurstUntil] = useState(0);
  const [, tick] = useState(0);
  const uploaded = () => {
    setBurstUntil(Date.now() + 20000);
    list.reload();
  };
  const burst = burstUntil > Date.now();
  useEffect(() => {
    if (!burst) return undefined;
    const t = setTimeout(() => tick((n) => n + 1), burstUntil - Date.now() + 10);
    return () => clearTimeout(t);
  }, [burstUntil]);
  const busy = !searching && list.data && list.data.files && list.data.files.some((f) => inProgress(f.processing_status && f.processing_status.status));
  const live = busy || (!searching && burst);
  useInterval(() => list.reload(), 2000, !!live);

  const select = (id, on) => {
    const s = new Set(selected);
    if (on) s.add(id);
    else s.delete(id);
    setSelected(s);
  };
  const rows = list.data ? (searching ? list.data.results || [] : list.data.files || []) : [];
  const selectAll = (on) => {
    const s = new Set(selected);
    rows.forEach((r) => (on ? s.add(r.id) : s.delete(r.id)));
    setSelected(s);
  };
  const paging = list.data ? (searching ? list.data : list.data.pagination) : null;

  return (
    <Page title="Documents" wide>
      <Upload onUploaded={uploaded} />
      <Filters state={state} onChange={go} />
      <BulkBar ids={[...selected]} pipelines={pipelines.data} onDone={() => list.reload()} onClear={() => setSelected(new Set())} />
      <Failure error={list.error} retry={list.reload} />
      {list.loading && !list.data && <Loading what="the documents" />}
      {list.data && (
        <section aria-labelledby="h-list" aria-busy={list.loading ? 'true' : 'false'}>
          <h2 id="h-list" class="sr">{searching ? 'Search results' : 'Documents'}</h2>
          {busy && <p class="muted live" role="status">Documents in progress: updating every 2 seconds.</p>}
          {rows.length === 0 ? (
            <p>{searching ? 'No document matches this search.' : 'No documents yet: drop some files above.'}</p>
          ) : searching ? (
            <SearchResults hits={rows} selected={selected} onSelect={select} />
          ) : (
            <FileTable files={rows} state={state} selected={selected} onSelect={select} onSelectAll={selectAll} onSort={(sort, order) => go({ ...state, sort, order, page: '1' })} />
          )}
          {paging && <Pager page={paging.page} pages={paging.pages} total={paging.total} onPage={(p) => go({ ...state, page: String(p) })} />}
        </section>
      )}
    </Page>
  );
}
