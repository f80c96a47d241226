// The bulk actions over the selected documents: download as one ZIP,
// reprocess, delete (after a confirmation), assign a pipeline.
import { useState } from 'preact/hooks';
import { api, downloadPost } from '../../lib/api.js';
import { notify } from '../../components/notices.jsx';

export function BulkBar({ ids, pipelines, onDone, onClear }) {
  const [busy, setBusy] = useState(false);
  const [pipeline, setPipeline] = useState('');
  const [confirming, setConfirming] = useState(false);
  const n = ids.length;
  if (n === 0) return null;

  const run = async (what, fn) => {
    setBusy(true);
    try {
      const msg = await fn();
      notify(msg || what + ': done');
      onDone();
    } catch (e) {
      notify(what + ' failed: ' + (e.detail || e.message), 'error');
    } finally {
      setBusy(false);
      setConfirming(false);
    }
  };

  const zip = () => run('Download', async () => {
    await downloadPost('/api/files/bulk-download', ids, 'documents.zip');
    return `Downloading ${n} document${n === 1 ? '' : 's'} as a ZIP`;
  });
  const reprocess = () => run('Reprocessing', async () => {
    const r = await api.post('/api/files/bulk-reprocess', ids);
    return r.message || `${n} queued again`;
  });
  const del = () => run('Deletion', async () => {
    const r = await api.post('/api/files/bulk-delete', ids);
    onClear();
    return r.message || `${n} deleted`;
  });
  const assign = () => run('Assigning the pipeline', async () => {
    await Promise.all(ids.map((id) => api.post(`/api/files/${id}/assign-pipeline${pipeline ? '?pipeline_id=' + encodeURIComponent(pipeline) : ''}`)));
    return pipeline ? `Pipeline assigned to ${n} document${n === 1 ? '' : 's'}` : `Pipeline cleared on ${n} document${n === 1 ? '' : 's'}`;
  });

  return (
    <div class="bulk card" role="region" aria-label="Actions on the selected documents">
      <p class="bulk-count">{n} selected</p>
      <button type="button" onClick={zip} disabled={busy}>Download ZIP</button>
      <button type="button" class="secondary" onClick={reprocess} disabled={busy}>Reprocess</button>
      <span class="row inline">
        <label for="bulk-pipeline">Pipeline</label>
        <select id="bulk-pipeline" value={pipeline} onChange={(e) => setPipeline(e.currentTarget.value)}>
          <option value="">None (default routing)</option>
          {(pipelines || []).map((p) => <option key={p.id} value={p.id}>{p.name}</option>)}
        </select>
        <button type="button" class="secondary" onClick={assign} disabled={busy}>Assign</button>
      </span>
      {confirming ? (
        <span class="row inline" role="alert">
          Delete {n} document{n === 1 ? '' : 's'} for good?
          <button type="button" class="danger" onClick={del} disabled={busy}>Delete</button>
          <button type="button" class="secondary" onClick={() => setConfirming(false)}>Cancel</button>
        </span>
      ) : (
        <button type="button" class="danger" onClick={() => setConfirming(true)} disabled={busy}>Delete…</button>
      )}
      <button type="button" class="link" onClick={onClear}>Clear selection</button>
    </div>
  );
}
