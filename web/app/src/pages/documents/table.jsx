// The list of documents: a check box per row for the bulk actions,
// sortable columns, the live status, and in search results the snippet
// with its highlighted matches.
import { Highlighted } from '../../components/highlight.jsx';
import { bytes, date } from '../../lib/format.js';

const sortable = [
  ['original_filename', 'Name'],
  ['mime_type', 'Type'],
  ['file_size', 'Size'],
  ['created_at', 'Added'],
];

function SortHeader({ col, label, state, onSort }) {
  const active = state.sort === col;
  const dir = active ? (state.order === 'asc' ? 'ascending' : 'descending') : undefined;
  const next = active && state.order === 'desc' ? 'asc' : 'desc';
  return (
    <th scope="col" aria-sort={dir} class={col === 'file_size' ? 'num' : undefined}>
      <button type="button" class="sort" onClick={() => onSort(col, active ? next : col === 'original_filename' ? 'asc' : 'desc')}>
        {label}
        <span aria-hidden="true">{active ? (state.order === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </button>
    </th>
  );
}

export function StatusBadge({ status }) {
  const st = (status && status.status) || status || '';
  return (
    <span class={'status status-' + st}>
      {st}
      {status && status.has_errors && st !== 'failed' ? ' (errors)' : ''}
    </span>
  );
}

export function FileTable({ files, state, selected, onSelect, onSelectAll, onSort }) {
  const all = files.length > 0 && files.every((f) => selected.has(f.id));
  return (
    <div class="table-wrap">
      <table class="files">
        <caption class="sr">Documents</caption>
        <thead>
          <tr>
            <th scope="col" class="sel">
              <input type="checkbox" aria-label="Select all on this page" checked={all} onChange={(e) => onSelectAll(e.currentTarget.checked)} />
            </th>
            {sortable.map(([c, l]) => <SortHeader key={c} col={c} label={l} state={state} onSort={onSort} />)}
            <th scope="col">Status</th>
          </tr>
        </thead>
        <tbody>
          {files.map((f) => (
            <tr key={f.id}>
              <td class="sel">
                <input type="checkbox" aria-label={'Select ' + f.original_filename} checked={selected.has(f.id)} onChange={(e) => onSelect(f.id, e.currentTarget.checked)} />
              </td>
              <td class="name">
                <a href={'/files/' + f.id}>{f.original_filename}</a>
              </td>
              <td>{f.mime_type}</td>
              <td class="num">{bytes(f.file_size)}</td>
              <td>{date(f.created_at)}</td>
              <td><StatusBadge status={f.processing_status} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function SearchResults({ hits, selected, onSelect }) {
  return (
    <ol class="hits">
      {hits.map((h) => (
        <li key={h.file_id} class="hit card">
          <div class="hit-head">
            <input type="checkbox" aria-label={'Select ' + h.original_filename} checked={selected.has(h.file_id)} onChange={(e) => onSelect(h.file_id, e.currentTarget.checked)} />
            <a href={'/files/' + h.file_id} class="hit-title">
              {h._formatted && h._formatted.document_title ? <Highlighted text={h._formatted.document_title} /> : h.document_title || h.original_filename}
            </a>
          </div>
          <p class="muted hit-meta">
            {h.original_filename}
            {h.document_type ? ' · ' + h.document_type : ''}
          </p>
          {h._formatted && h._formatted.ocr_text && (
            <p class="snippet">
              <Highlighted text={h._formatted.ocr_text} />
            </p>
          )}
          {h.tags && h.tags.length > 0 && (
            <p class="tags">{h.tags.map((t) => <span key={t} class="chip">{t}</span>)}</p>
          )}
        </li>
      ))}
    </ol>
  );
}

export function Pager({ page, pages, total, onPage }) {
  if (!pages || pages <= 1) return total != null ? <p class="muted">{total} document{total === 1 ? '' : 's'}</p> : null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" class="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>Previous</button>
      <span>
        Page {page} of {pages} · {total} documents
      </span>
      <button type="button" class="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>Next</button>
    </nav>
  );
}
