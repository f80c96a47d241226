// /pipelines: the pipelines the user may see (/api/pipelines): create one,
// and for a pipeline the user may change edit its name, description, active
// and default flags and its steps (add, configure, enable, reorder,
// remove). System pipelines are read-only to everyone but administrators.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { session } from '../lib/session.js';
import { Text, Check, Choice, YesNo, Confirm, run } from './admin/ui.jsx';

// mine tells whether the user may change p (their own; system pipelines
// for administrators and in single-user mode).
function mine(p) {
  return session.admin || session.single_user || (p.owner_id && p.owner_id === session.id);
}

function NewPipeline({ onCreated }) {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const submit = async (e) => {
    e.preventDefault();
    const p = await run(() => api.post('/api/pipelines', { name: name.trim(), description, is_active: true }),
      (r) => `Pipeline ${r.name} created`);
    if (p) {
      setName('');
      setDescription('');
      onCreated(p);
    }
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-pipeline-h">
      <h2 id="new-pipeline-h">New pipeline</h2>
      <div class="row">
        <Text label="Name" name="pipeline-name" value={name} onInput={setName} required maxLength={200} />
        <Text label="Description" name="pipeline-description" value={description} onInput={setDescription} />
        <button type="submit">Create pipeline</button>
      </div>
    </form>
  );
}

// StepConfig edits a step's config from its type's config_schema.
function StepConfig({ schema, config, onChange }) {
  const keys = Object.keys(schema || {});
  if (!keys.length) return <span class="muted">No settings</span>;
  return (
    <div class="row">
      {keys.map((k) => {
        const o = schema[k];
        const v = config && config[k] !== undefined ? config[k] : o.default;
        if (o.type === 'boolean') return <Check key={k} label={k} checked={v} onChange={(x) => onChange({ ...config, [k]: x })} />;
        if (o.type === 'select') return <Choice key={k} label={k} value={v} options={o.options || []} onChange={(x) => onChange({ ...config, [k]: x })} />;
        return <Text key={k} label={k} value={v} onInput={(x) => onChange({ ...config, [k]: x })} />;
      })}
    </div>
  );
}

function Steps({ pipeline, types, editable, reload }) {
  const [adding, setAdding] = useState('');
  const steps = [...(pipeline.steps || [])].sort((a, b) => a.position - b.position);
  const base = `/api/pipelines/${pipeline.id}`;
  const move = (i, d) => {
    const ids = steps.map((s) => s.id);
    [ids[i], ids[i + d]] = [ids[i + d], ids[i]];
    return run(() => api.put(`${base}/steps/reorder`, { step_ids: ids }), 'Steps reordered', reload);
  };
  const save = (s, patch) => run(() => api.put(`${base}/steps/${s.id}`, patch), `Step ${s.label || s.step_type} saved`, reload);
  const typeNames = Object.keys(types || {});
  return (
    <div>
      <h3>Steps</h3>
      {steps.length === 0 && <p class="muted">No steps: documents routed here are only recorded.</p>}
      <ol class="steps">
        {steps.map((s, i) => (
          <li key={s.id} class="card step">
            <div class="row">
              <strong>{s.label || (types[s.step_type] && types[s.step_type].label) || s.step_type}</strong>
              <code>{s.step_type}</code>
              {!s.enabled && <span class="badge">disabled</span>}
            </div>
            {editable && (
              <>
                <StepConfig schema={types[s.step_type] && types[s.step_type].config_schema} config={s.config || {}}
                  onChange={(config) => save(s, { config })} />
                <div class="row">
                  <Check label="Enabled" checked={s.enabled} onChange={(enabled) => save(s, { enabled })} />
                  <button type="button" class="secondary" disabled={i === 0} aria-label={`Move ${s.step_type} up`} onClick={() => move(i, -1)}>Up</button>
                  <button type="button" class="secondary" disabled={i === steps.length - 1} aria-label={`Move ${s.step_type} down`} onClick={() => move(i, 1)}>Down</button>
                  <Confirm question={`Remove the step ${s.step_type}?`} label={`Remove ${s.step_type}`}
                    onConfirm={() => run(() => api.del(`${base}/steps/${s.id}`), 'Step removed', reload)}>Remove</Confirm>
                </div>
              </>
            )}
          </li>
        ))}
      </ol>
      {editable && (
        <form class="row" onSubmit={(e) => {
          e.preventDefault();
          if (adding) run(() => api.post(`${base}/steps`, { step_type: adding, enabled: true }), 'Step added', () => { setAdding(''); return reload(); });
        }}>
          <Choice label="Add a step" name="add-step" value={adding} onChange={setAdding}
            options={[['', 'Choose a step type…'], ...typeNames.map((t) => [t, types[t].label || t])]} />
          <button type="submit" disabled={!adding}>Add step</button>
        </form>
      )}
    </div>
  );
}

function Editor({ id, types, onChanged, onDeleted }) {
  const p = useFetch(() => api.get(`/api/pipelines/${id}`), [id]);
  const [draft, setDraft] = useState(null);
  if (p.error) return <Failure error={p.error} retry={p.reload} />;
  if (!p.data) return <Loading what="the pipeline" />;
  const pl = p.data;
  const editable = mine(pl);
  const d = draft && draft.id === pl.id ? draft : { id: pl.id, name: pl.name, description: pl.description, is_active: pl.is_active, is_default: pl.is_default };
  const set = (k) => (v) => setDraft({ ...d, [k]: v });
  const save = async (e) => {
    e.preventDefault();
    const { id: _, ...body } = d;
    await run(() => api.put(`/api/pipelines/${pl.id}`, body), `Pipeline ${d.name} saved`, () => { setDraft(null); p.reload(); onChanged(); });
  };
  const reload = () => { p.reload(); onChanged(); };
  return (
    <section aria-labelledby="pipeline-h" id="pipeline-editor">
      <h2 id="pipeline-h">{pl.name}</h2>
      <p class="muted">{pl.owner_id ? `Owned by ${pl.owner_id}` : 'System pipeline'}</p>
      {editable ? (
        <form onSubmit={save}>
          <div class="row">
            <Text label="Name" name="edit-pipeline-name" value={d.name} onInput={set('name')} required />
            <Text label="Description" name="edit-pipeline-description" value={d.description} onInput={set('description')} />
            <Check label="Active" name="edit-pipeline-active" checked={d.is_active} onChange={set('is_active')} />
            <Check label="Default for my documents" name="edit-pipeline-default" checked={d.is_default} onChange={set('is_default')} />
            <button type="submit">Save pipeline</button>
            <Confirm question={`Delete the pipeline ${pl.name}?`} label={`Delete ${pl.name}`}
              onConfirm={() => run(() => api.del(`/api/pipelines/${pl.id}`), `Pipeline ${pl.name} deleted`, onDeleted)}>Delete</Confirm>
          </div>
        </form>
      ) : <p>{pl.description}</p>}
      <Steps pipeline={pl} types={types || {}} editable={editable} reload={reload} />
    </section>
  );
}

export default function Pipelines() {
  const list = useFetch(() => api.get('/api/pipelines'), []);
  const types = useFetch(() => api.get('/api/pipelines/step-types'), []);
  const [open, setOpen] = useState(null);
  return (
    <Page title="Pipelines">
      <p class="muted">A pipeline is the list of steps a document goes through. Routing rules (see <a href="/rules">Rules</a>) choose one per document.</p>
      <NewPipeline onCreated={(p) => { list.reload(); setOpen(p.id); }} />
      <section aria-labelledby="pipelines-h">
        <h2 id="pipelines-h">Pipelines</h2>
        <Failure error={list.error} retry={list.reload} />
        {list.loading && !list.data && <Loading what="pipelines" />}
        {list.data && (
          <div class="table-wrap">
            <table id="pipelines-table">
              <thead><tr><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">Active</th><th scope="col">Default</th>
                <th scope="col" class="num">Steps</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
              <tbody>
                {list.data.map((p) => (
                  <tr key={p.id} class={open === p.id ? 'selected' : undefined}>
                    <td>{p.name}{p.description && <div class="muted">{p.description}</div>}</td>
                    <td>{p.owner_id || 'system'}</td>
                    <td><YesNo value={p.is_active} /></td>
                    <td><YesNo value={p.is_default} /></td>
                    <td class="num">{(p.steps || []).length || ''}</td>
                    <td><button type="button" class="secondary" aria-label={`${mine(p) ? 'Edit' : 'View'} ${p.name}`}
                      aria-expanded={open === p.id ? 'true' : 'false'} onClick={() => setOpen(open === p.id ? null : p.id)}>
                      {mine(p) ? 'Edit' : 'View'}</button></td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {open && <Editor id={open} types={types.data} onChanged={list.reload} onDeleted={() => { setOpen(null); list.reload(); }} />}
    </Page>
  );
}
