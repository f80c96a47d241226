// The preview with its annotations drawn over the page. PDFs show in the
// browser's own viewer (an iframe opened at the chosen page and fitted to
// the frame), images as an image. "Draw" lays a layer over the page:
// dragging marks a region (stored as fractions of the page, 0–1 from the
// top left), then a form asks for the note, type and colour. The region's
// numbers are fields of that form too, so it can be made without a mouse.
// The annotations of the page are drawn as boxes; the list beside names
// them all, by page.
import { useRef, useState } from 'preact/hooks';
import { api } from '../../lib/api.js';
import { session } from '../../lib/session.js';
import { notify } from '../../components/notices.jsx';

const types = ['note', 'highlight', 'underline', 'strikethrough'];
const clamp = (v) => Math.min(1, Math.max(0, v));
const pct = (v) => (v * 100).toFixed(2) + '%';
const round = (v) => Math.round(v * 1000) / 1000;

// Frame shows the processed version (a PDF, after conversion) when there
// is one, else the original when the browser can show it.
function Frame({ file, page, processed }) {
  const mime = file.mime_type || '';
  const src = `/api/files/${file.id}/preview?version=${processed ? 'processed' : 'original'}`;
  if (!processed && mime.startsWith('image/')) {
    return <img class="preview-doc" src={src} alt={'Preview of ' + file.original_filename} />;
  }
  if (processed || mime === 'application/pdf' || mime === 'text/plain') {
    return <iframe class="preview-doc" key={page} src={`${src}#page=${page}&view=Fit&toolbar=0`} title={'Preview of ' + file.original_filename + ', page ' + page} />;
  }
  return (
    <p class="preview-none">
      No preview for {file.mime_type || 'this type'}. <a href={`/api/files/${file.id}/download`} download>Download it</a>.
    </p>
  );
}

export function AnnotatedPreview({ file, processed, annotations, reload, canAnnotate }) {
  const [page, setPage] = useState(1);
  const [drawing, setDrawing] = useState(false);
  const [rect, setRect] = useState(null); // {x, y, width, height} while or after dragging
  const [draft, setDraft] = useState({ content: '', annotation_type: 'note', color: '#ffcc00' });
  const [focus, setFocus] = useState(null);
  const layer = useRef(null);
  const start = useRef(null);

  const at = (e) => {
    const b = layer.current.getBoundingClientRect();
    return { x: clamp((e.clientX - b.left) / b.width), y: clamp((e.clientY - b.top) / b.height) };
  };
  const down = (e) => {
    if (!drawing) return;
    e.preventDefault();
    layer.current.setPointerCapture && layer.current.setPointerCapture(e.pointerId);
    start.current = at(e);
    setRect({ ...start.current, width: 0, height: 0 });
  };
  const move = (e) => {
    if (!drawing || !start.current) return;
    const p = at(e);
    const s = start.current;
    setRect({ x: Math.min(s.x, p.x), y: Math.min(s.y, p.y), width: Math.abs(p.x - s.x), height: Math.abs(p.y - s.y) });
  };
  const up = () => {
    start.current = null;
  };

  const save = async (e) => {
    e.preventDefault();
    const r = rect || { x: 0.1, y: 0.1, width: 0.3, height: 0.05 };
    try {
      await api.post(`/api/files/${file.id}/annotations`, {
        page, x: round(r.x), y: round(r.y), width: round(Math.max(r.width, 0.005)), height: round(Math.max(r.height, 0.005)),
        content: draft.content, annotation_type: draft.annotation_type, color: draft.color,
      });
      notify('Annotation saved');
      setRect(null);
      setDrawing(false);
      setDraft({ ...draft, content: '' });
      reload();
    } catch (err) {
      notify('The annotation was not saved: ' + (err.detail || err.message), 'error');
    }
  };
  const remove = async (a) => {
    try {
      await api.del(`/api/files/${file.id}/annotations/${a.id}`);
      reload();
    } catch (err) {
      notify('Deleting failed: ' + (err.detail || err.message), 'error');
    }
  };
  const num = (k, label) => (
    <div class="field small">
      <label for={'an-' + k}>{label}</label>
      <input id={'an-' + k} type="number" min="0" max="1" step="0.01" value={rect ? round(rect[k]) : ''}
        onInput={(e) => setRect({ ...(rect || { x: 0, y: 0, width: 0, height: 0 }), [k]: clamp(Number(e.currentTarget.value) || 0) })} />
    </div>
  );
  const onPage = annotations.filter((a) => a.page === page);

  return (
    <div class="annotated">
      <div class="preview-tools row">
        <div class="field small">
          <label for="pv-page">Page</label>
          <input id="pv-page" type="number" min="1" value={page} onChange={(e) => setPage(Math.max(1, Number(e.currentTarget.value) || 1))} />
        </div>
        {canAnnotate && (
          <button type="button" class={drawing ? '' : 'secondary'} aria-pressed={drawing ? 'true' : 'false'} onClick={() => { setDrawing(!drawing); setRect(null); }} id="draw-toggle">
            {drawing ? 'Stop drawing' : 'Draw an annotation'}
          </button>
        )}
        <a class="button secondary" href={`/api/files/${file.id}/download?version=original`} download>Download</a>
      </div>
      <div class="preview">
        <Frame file={file} page={page} processed={processed} />
        <div ref={layer} class={drawing ? 'overlay drawing' : 'overlay'} id="annotation-layer" onPointerDown={down} onPointerMove={move} onPointerUp={up} aria-hidden="true">
          {onPage.map((a) => (
            <div key={a.id} class={'box box-' + a.annotation_type + (focus === a.id ? ' focus' : '')} title={a.content}
              style={{ left: pct(a.x), top: pct(a.y), width: pct(a.width), height: pct(a.height), borderColor: a.color, backgroundColor: a.annotation_type === 'highlight' ? a.color + '55' : 'transparent' }} />
          ))}
          {rect && <div class="box draft" style={{ left: pct(rect.x), top: pct(rect.y), width: pct(rect.width), height: pct(rect.height) }} />}
        </div>
      </div>
      {drawing && (
        <form class="annotation-form card" onSubmit={save} aria-label="New annotation">
          <p class="muted">Drag over the page to mark a region, or give it in fractions of the page.</p>
          <div class="row">{num('x', 'Left')}{num('y', 'Top')}{num('width', 'Width')}{num('height', 'Height')}</div>
          <div class="row">
            <div class="field">
              <label for="an-type">Type</label>
              <select id="an-type" value={draft.annotation_type} onChange={(e) => setDraft({ ...draft, annotation_type: e.currentTarget.value })}>
                {types.map((t) => <option key={t} value={t}>{t}</option>)}
              </select>
            </div>
            <div class="field">
              <label for="an-color">Colour</label>
              <input id="an-color" type="color" value={draft.color} onInput={(e) => setDraft({ ...draft, color: e.currentTarget.value })} />
            </div>
          </div>
          <div class="field">
            <label for="an-content">Note</label>
            <textarea id="an-content" rows={2} value={draft.content} onInput={(e) => setDraft({ ...draft, content: e.currentTarget.value })} />
          </div>
          <button type="submit" disabled={!rect}>Save annotation</button>
        </form>
      )}
      <h3>Annotations</h3>
      {annotations.length === 0 ? (
        <p class="muted">No annotations.</p>
      ) : (
        <ul class="plain annotations">
          {annotations.map((a) => (
            <li key={a.id} class="annotation">
              <span class="swatch" style={{ backgroundColor: a.color }} aria-hidden="true" />
              <button type="button" class="link" onClick={() => { setPage(a.page); setFocus(a.id); }}>
                Page {a.page}, {a.annotation_type}
              </button>
              {a.content && <span class="annotation-text">: {a.content}</span>}
              <span class="muted"> · {a.user_id}</span>
              {a.user_id === session.id && <button type="button" class="link" onClick={() => remove(a)}>Delete<span class="sr"> annotation on page {a.page}</span></button>}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
