// The document's metadata: title, document date, tags, correspondent,
// document type and the other extracted fields of ai_metadata. Owners and
// editors edit them through PATCH /api/files/{id}/metadata; a 422 names
// the field, shown beside it.
import { useState } from 'preact/hooks';
import { api } from '../../lib/api.js';
import { notify } from '../../components/notices.jsx';

const known = ['title', 'date', 'tags', 'sender', 'correspondent', 'document_type'];

function fieldsOf(file) {
  const m = file.ai_metadata || {};
  return {
    title: file.document_title || m.title || '',
    document_date: m.date || '',
    tags: Array.isArray(m.tags) ? m.tags.join(', ') : '',
    correspondent: m.correspondent || m.sender || '',
    document_type: m.document_type || '',
  };
}

function extras(file) {
  const m = file.ai_metadata || {};
  return Object.entries(m).filter(([k, v]) => !known.includes(k) && v !== null && v !== '' && typeof v !== 'object');
}

export function Metadata({ file, canEdit, onSaved }) {
  const [editing, setEditing] = useState(false);
  const [form, setForm] = useState(() => fieldsOf(file));
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  const f = fieldsOf(file);
  const set = (k) => (e) => setForm({ ...form, [k]: e.currentTarget.value });

  const save = async (e) => {
    e.preventDefault();
    setBusy(true);
    setErrors({});
    try {
      const body = {
        title: form.title,
        document_date: form.document_date || null,
        tags: form.tags.split(',').map((t) => t.trim()).filter(Boolean),
        correspondent: form.correspondent,
        document_type: form.document_type,
      };
      await api.patch(`/api/files/${file.id}/metadata`, body);
      notify('Metadata saved');
      setEditing(false);
      onSaved();
    } catch (err) {
      if (err.status === 404 || err.status === 405) {
        setErrors({ _: 'This server cannot edit metadata yet.' });
      } else {
        const m = /^([a-z_]+)/.exec(err.detail || '');
        setErrors(m && m[1] in form ? { [m[1]]: err.detail } : { _: err.detail || err.message });
      }
    } finally {
      setBusy(false);
    }
  };

  if (!editing) {
    return (
      <div>
        <dl class="meta">
          <dt>Title</dt><dd>{f.title || <span class="muted">none</span>}</dd>
          <dt>Document date</dt><dd>{f.document_date || <span class="muted">none</span>}</dd>
          <dt>Tags</dt><dd>{f.tags ? f.tags.split(', ').map((t) => <span key={t} class="chip">{t}</span>) : <span class="muted">none</span>}</dd>
          <dt>Correspondent</dt><dd>{f.correspondent || <span class="muted">none</span>}</dd>
          <dt>Document type</dt><dd>{f.document_type || <span class="muted">none</span>}</dd>
          {extras(file).map(([k, v]) => [<dt key={'k' + k}>{k.replace(/_/g, ' ')}</dt>, <dd key={'v' + k}>{String(v)}</dd>])}
        </dl>
        {canEdit && <button type="button" class="secondary" onClick={() => { setForm(fieldsOf(file)); setEditing(true); }}>Edit metadata</button>}
      </div>
    );
  }
  const field = (k, label, type = 'text') => (
    <div class="field">
      <label for={'m-' + k}>{label}</label>
      <input id={'m-' + k} type={type} value={form[k]} onInput={set(k)} aria-invalid={errors[k] ? 'true' : undefined} aria-describedby={errors[k] ? 'm-' + k + '-err' : undefined} />
      {errors[k] && <span id={'m-' + k + '-err'} class="error">{errors[k]}</span>}
    </div>
  );
  return (
    <form class="meta-form" onSubmit={save}>
      {field('title', 'Title')}
      {field('document_date', 'Document date', 'date')}
      {field('tags', 'Tags (comma-separated)')}
      {field('correspondent', 'Correspondent')}
      {field('document_type', 'Document type')}
      {errors._ && <p class="error" role="alert">{errors._}</p>}
      <div class="row">
        <button type="submit" disabled={busy}>Save</button>
        <button type="button" class="secondary" onClick={() => setEditing(false)}>Cancel</button>
      </div>
    </form>
  );
}
