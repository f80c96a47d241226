// The document's metadata: title, document date, tags, correspondent,
// document type and the other extracted fields of ai_metadata. Owners and
// editors edit them through PATCH /api/files/{id}/metadata; a 422 names
// the field, shown beside it.
import { useState } from 'preact/hooks';
import { api } from '../../lib/api.js';
import { notify } from '../../components/notices.jsx';

const known = ['title', 'date', 'tags', 'sender', 'correspondent', 'document_type'];
// The extracted fields a person may edit besides the named ones (sent as
// ai_metadata.<key>); the pipeline's own fields are shown read-only.
const extracted = [
  ['amount', 'Amount'],
  ['currency', 'Currency'],
  ['reference_number', 'Reference number'],
  ['iban', 'IBAN'],
  ['language', 'Language'],
];

function fieldsOf(file) {
  const m = file.ai_metadata || {};
  return {
    title: file.document_title || m.title || '',
    document_date: m.date || '',
    tags: Array.isArray(m.tags) ? m.tags.join(', ') : '',
    correspondent: m.correspondent || m.sender || '',
    document_type: m.document_type || '',
    ...Object.fromEntries(extracted.map(([k]) => [k, m[k] == null ? '' : String(m[k])])),
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
        ai_metadata: Object.fromEntries(extracted.map(([k]) => [k, form[k]])),
      };
      await api.patch(`/api/files/${file.id}/metadata`, body);
      notify('Metadata saved');
      setEditing(false);
      onSaved();
    } catch (err) {
      if (err.status === 404 || err.status === 405) {
        setErrors({ _: 'This server cannot edit metadata yet.' });
      } else {
        // 422 names each bad field ("title", "ai_metadata.amount").
        const next = {};
        for (const [f, msg] of Object.entries(err.fields || {})) {
          const k = f.replace(/^ai_metadata\./, '');
          next[k in form ? k : '_'] = msg;
        }
        if (Object.keys(next).length === 0 || !next._) next._ = err.detail || err.message;
        setErrors(next);
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
      {extracted.map(([k, label]) => field(k, label))}
      {errors._ && <p class="error" role="alert">{errors._}</p>}
      <div class="row">
        <button type="submit" disabled={busy}>Save</button>
        <button type="button" class="secondary" onClick={() => setEditing(false)}>Cancel</button>
      </div>
    </form>
  );
}
