// /files/{id} — one document: preview with annotations, metadata, the
// processing log with each step's timing, similar documents, shares,
// comments and the delivery status per destination. The page reads the
// file again every 2 s while it is in progress.
import { useRoute } from 'preact-iso';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { bytes, date } from '../lib/format.js';
import { session } from '../lib/session.js';
import { useFetch, useInterval } from '../lib/use.js';
import { notify } from '../components/notices.jsx';
import { inProgress } from './documents/query.js';
import { StatusBadge } from './documents/table.jsx';
import { ProcessingLog } from './file/log.jsx';
import { Metadata } from './file/metadata.jsx';
import { Shares } from './file/shares.jsx';
import { Comments } from './file/comments.jsx';
import { AnnotatedPreview } from './file/annotations.jsx';

// roleOf is what the signed-in user may do with the file, for showing the
// right controls (the server decides each request anyway).
function roleOf(file, sharedWith) {
  if (session.admin || session.single_user || file.owner_id === session.id) return 'owner';
  const mine = (sharedWith || []).find((s) => s.user_id === session.id);
  if (mine) return mine.role;
  return file.owner_id == null ? 'editor' : 'viewer';
}

function Similar({ fileID }) {
  const sim = useFetch(() => api.get(`/api/files/${fileID}/similar`, { limit: 5 }), [fileID]);
  if (sim.error) return <p class="muted">{sim.error.detail}</p>;
  if (!sim.data) return <Loading what="similar documents" />;
  const docs = sim.data.similar_documents || [];
  if (docs.length === 0) return <p class="muted">{sim.data.message || 'No similar documents.'}</p>;
  return (
    <ul class="plain">
      {docs.map((d) => (
        <li key={d.file_id}>
          <a href={'/files/' + d.file_id}>{d.document_title || d.original_filename}</a>{' '}
          <span class="muted">{Math.round(d.similarity_score * 100)}% similar</span>
        </li>
      ))}
    </ul>
  );
}

function Destinations({ dests }) {
  if (!dests || dests.length === 0) return <p class="muted">Not sent anywhere.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr">Delivery status per destination</caption>
        <thead><tr><th scope="col">Destination</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">When</th></tr></thead>
        <tbody>
          {dests.map((d, i) => (
            <tr key={i}>
              <td>{d.name} <span class="muted">({d.type})</span>{d.remote_path && <div class="muted"><code>{d.remote_path}</code></div>}</td>
              <td class={'status-' + d.status}>{d.status}{d.error && <div class="error">{d.error}</div>}</td>
              <td class="num">{d.attempts}</td>
              <td>{date(d.delivered_at || d.next_attempt_at || d.updated_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export default function File() {
  const { params } = useRoute();
  const id = params.id;
  const rec = useFetch(() => api.get(`/api/files/${encodeURIComponent(id)}`), [id]);
  const sharedWith = useFetch(() => api.get(`/api/files/${encodeURIComponent(id)}/shared-with`).catch(() => []), [id]);
  const anns = useFetch(() => api.get(`/api/files/${encodeURIComponent(id)}/annotations`), [id]);
  const st = rec.data && rec.data.processing_status && rec.data.processing_status.status;
  useInterval(() => rec.reload(), 2000, inProgress(st));

  if (!rec.data) {
    return (
      <Page title="Document">
        {rec.loading ? <Loading what="the document" /> : <Failure error={rec.error} retry={rec.reload} />}
      </Page>
    );
  }
  const file = rec.data.file;
  const role = roleOf(file, sharedWith.data);
  const canEdit = role === 'owner' || role === 'editor';
  const title = file.document_title || file.original_filename;
  const reprocess = async () => {
    try {
      await api.post(`/api/files/${file.id}/reprocess`);
      notify('Queued for processing again');
      rec.reload();
    } catch (err) {
      notify('Reprocessing failed: ' + (err.detail || err.message), 'error');
    }
  };

  return (
    <Page title={title} wide actions={canEdit && <button type="button" class="secondary" onClick={reprocess}>Reprocess</button>}>
      <p class="muted file-facts">
        {file.original_filename} · {file.mime_type} · {bytes(file.file_size)} · added {date(file.created_at)}
        {file.owner_id && <> · owner {file.owner_id}</>} · <StatusBadge status={rec.data.processing_status} />
      </p>
      <div class="file-grid">
        <section class="file-preview" aria-labelledby="h-preview">
          <h2 id="h-preview">Preview</h2>
          <AnnotatedPreview file={file} processed={!!(rec.data.files_on_disk && rec.data.files_on_disk.processed)} annotations={(anns.data && anns.data.annotations) || []} reload={anns.reload} canAnnotate={canEdit} />
        </section>
        <div class="file-side">
          <section aria-labelledby="h-meta">
            <h2 id="h-meta">Metadata</h2>
            <Metadata file={file} canEdit={canEdit} onSaved={rec.reload} />
          </section>
          <section aria-labelledby="h-shares">
            <h2 id="h-shares">Shared with</h2>
            <Shares fileID={file.id} canShare={role === 'owner' && !session.single_user} sharedWith={sharedWith.data} reloadSharedWith={sharedWith.reload} />
          </section>
          <section aria-labelledby="h-comments">
            <h2 id="h-comments">Comments</h2>
            <Comments fileID={file.id} canComment={canEdit} />
          </section>
        </div>
      </div>
      <section aria-labelledby="h-log">
        <h2 id="h-log">Processing</h2>
        <ProcessingLog logs={rec.data.logs} />
      </section>
      <div class="file-grid two">
        <section aria-labelledby="h-similar">
          <h2 id="h-similar">Similar documents</h2>
          <Similar fileID={file.id} />
        </section>
        <section aria-labelledby="h-dest">
          <h2 id="h-dest">Deliveries</h2>
          <Destinations dests={rec.data.destinations} />
        </section>
      </div>
    </Page>
  );
}
