// /rules: routing rules (/api/routing-rules: which pipeline a document
// takes, first match by position) and classification rules
// (/api/classification-rules: which category a document gets). Each list
// creates, edits in place, switches on and off and deletes; routing rules
// also move up and down. System rules are read-only but to
// administrators.
import { useState } from 'preact/hooks';
import { Page, Loading, Failure } from '../components/page.jsx';
import { api } from '../lib/api.js';
import { useFetch } from '../lib/use.js';
import { session } from '../lib/session.js';
import { Text, Check, Choice, Confirm, run } from './admin/ui.jsx';

function mine(r) {
  return session.admin || session.single_user || (r.owner_id && r.owner_id === session.id);
}

// ---- routing ----------------------------------------------------------------

const emptyRoute = { name: '', field: 'filename', operator: 'contains', value: '', target_pipeline_id: '', is_active: true };

function RouteForm({ initial, ops, pipelines, submitLabel, onSubmit, onCancel, idPrefix }) {
  const [r, setR] = useState({ ...initial, target_pipeline_id: String(initial.target_pipeline_id || '') });
  const set = (k) => (v) => setR({ ...r, [k]: v });
  const fields = [...((ops && ops.builtin_fields) || []), 'metadata.…'];
  const submit = (e) => {
    e.preventDefault();
    onSubmit({ name: r.name.trim(), field: r.field.trim(), operator: r.operator, value: r.value,
      target_pipeline_id: Number(r.target_pipeline_id), is_active: r.is_active });
  };
  return (
    <form class="row" onSubmit={submit}>
      <Text label="Name" name={`${idPrefix}-name`} value={r.name} onInput={set('name')} required />
      <Text label="Field" name={`${idPrefix}-field`} value={r.field} onInput={set('field')} required list={`${idPrefix}-fields`}
        hint="filename, file_type, size, document_type, category, or metadata.<key>" />
      <datalist id={`${idPrefix}-fields`}>{fields.map((f) => <option key={f} value={f.replace('…', '')} />)}</datalist>
      <Choice label="Operator" name={`${idPrefix}-operator`} value={r.operator} onChange={set('operator')} options={(ops && ops.operators) || [r.operator]} />
      <Text label="Value" name={`${idPrefix}-value`} value={r.value} onInput={set('value')} required />
      <Choice label="Pipeline" name={`${idPrefix}-target`} value={r.target_pipeline_id} onChange={set('target_pipeline_id')} required
        options={[['', 'Choose…'], ...(pipelines || []).map((p) => [String(p.id), p.name])]} />
      <Check label="Active" name={`${idPrefix}-active`} checked={r.is_active} onChange={set('is_active')} />
      <button type="submit">{submitLabel}</button>
      {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
    </form>
  );
}

function RoutingRules() {
  const rules = useFetch(() => api.get('/api/routing-rules'), []);
  const ops = useFetch(() => api.get('/api/routing-rules/operators'), []);
  const pipes = useFetch(() => api.get('/api/pipelines'), []);
  const [editing, setEditing] = useState(null);
  const [formKey, setFormKey] = useState(0);
  const name = (id) => ((pipes.data || []).find((p) => p.id === id) || {}).name || `#${id}`;
  const list = rules.data || [];
  const own = list.filter(mine);
  const move = (r, d) => {
    const ids = own.map((x) => x.id);
    const i = ids.indexOf(r.id);
    if (i + d < 0 || i + d >= ids.length) return;
    [ids[i], ids[i + d]] = [ids[i + d], ids[i]];
    run(() => api.put('/api/routing-rules/reorder', { rule_ids: ids }), 'Rules reordered', rules.reload);
  };
  return (
    <section aria-labelledby="routing-h">
      <h2 id="routing-h">Routing rules</h2>
      <p class="muted">Evaluated by position, your rules before the system's; the first match chooses the pipeline.</p>
      <Failure error={rules.error} retry={rules.reload} />
      {rules.loading && !rules.data && <Loading what="routing rules" />}
      {rules.data && (list.length === 0 ? <p class="muted">No routing rules: documents take the default pipeline.</p> : (
        <div class="table-wrap">
          <table id="routing-table">
            <thead><tr><th scope="col" class="num">#</th><th scope="col">Name</th><th scope="col">When</th><th scope="col">Pipeline</th>
              <th scope="col">Active</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              {list.map((r) => (editing === r.id ? (
                <tr key={r.id}><td colSpan={6}>
                  <RouteForm idPrefix={`route-${r.id}`} initial={r} ops={ops.data} pipelines={pipes.data} submitLabel="Save rule"
                    onCancel={() => setEditing(null)}
                    onSubmit={(body) => run(() => api.put(`/api/routing-rules/${r.id}`, body), `Rule ${body.name} saved`, () => { setEditing(null); return rules.reload(); })} />
                </td></tr>
              ) : (
                <tr key={r.id}>
                  <td class="num">{r.position}</td>
                  <td>{r.name}{!r.owner_id && <span class="badge">system</span>}</td>
                  <td><code>{r.field}</code> {r.operator} <code>{r.value}</code></td>
                  <td>{name(r.target_pipeline_id)}</td>
                  <td>{mine(r) ? (
                    <Check label={<span class="sr">Active: {r.name}</span>} checked={r.is_active}
                      onChange={(v) => run(() => api.put(`/api/routing-rules/${r.id}`, { is_active: v }), `Rule ${r.name} ${v ? 'on' : 'off'}`, rules.reload)} />
                  ) : (r.is_active ? 'yes' : 'no')}</td>
                  <td class="actions">{mine(r) && (
                    <>
                      <button type="button" class="secondary" aria-label={`Edit ${r.name}`} onClick={() => setEditing(r.id)}>Edit</button>
                      <button type="button" class="secondary" aria-label={`Move ${r.name} up`} onClick={() => move(r, -1)}>Up</button>
                      <button type="button" class="secondary" aria-label={`Move ${r.name} down`} onClick={() => move(r, 1)}>Down</button>
                      <Confirm question={`Delete the routing rule ${r.name}?`} label={`Delete ${r.name}`}
                        onConfirm={() => run(() => api.del(`/api/routing-rules/${r.id}`), `Rule ${r.name} deleted`, rules.reload)}>Delete</Confirm>
                    </>
                  )}</td>
                </tr>
              )))}
            </tbody>
          </table>
        </div>
      ))}
      <h3>New routing rule</h3>
      <RouteForm key={formKey} idPrefix="new-route" initial={emptyRoute} ops={ops.data} pipelines={pipes.data} submitLabel="Add routing rule"
        onSubmit={(body) => run(() => api.post('/api/routing-rules', body), `Rule ${body.name} added`, () => { setFormKey(formKey + 1); return rules.reload(); })} />
    </section>
  );
}

// ---- classification ---------------------------------------------------------

const emptyClass = { name: '', category: 'invoice', rule_type: 'content_keyword', pattern: '', priority: 0, case_sensitive: false, enabled: true };

function ClassForm({ initial, categories, types, submitLabel, onSubmit, onCancel, idPrefix }) {
  const [r, setR] = useState({ ...initial, priority: String(initial.priority ?? 0) });
  const set = (k) => (v) => setR({ ...r, [k]: v });
  const type = (types || []).find((t) => t.type === r.rule_type);
  const submit = (e) => {
    e.preventDefault();
    onSubmit({ name: r.name.trim(), category: r.category.trim(), rule_type: r.rule_type, pattern: r.pattern,
      priority: Number(r.priority) || 0, case_sensitive: r.case_sensitive, enabled: r.enabled });
  };
  return (
    <form class="row" onSubmit={submit}>
      <Text label="Name" name={`${idPrefix}-name`} value={r.name} onInput={set('name')} required />
      <Text label="Category" name={`${idPrefix}-category`} value={r.category} onInput={set('category')} required list={`${idPrefix}-cats`}
        hint="a built-in category or your own" />
      <datalist id={`${idPrefix}-cats`}>{Object.keys(categories || {}).map((k) => <option key={k} value={k}>{categories[k]}</option>)}</datalist>
      <Choice label="Rule type" name={`${idPrefix}-type`} value={r.rule_type} onChange={set('rule_type')}
        options={(types || [{ type: r.rule_type, label: r.rule_type }]).map((t) => [t.type, t.label])} />
      <Text label="Pattern" name={`${idPrefix}-pattern`} value={r.pattern} onInput={set('pattern')} required hint={type && type.description} />
      <Text label="Priority (0–1000)" name={`${idPrefix}-priority`} type="number" min="0" max="1000" value={r.priority} onInput={set('priority')} />
      <Check label="Case-sensitive" name={`${idPrefix}-case`} checked={r.case_sensitive} onChange={set('case_sensitive')} />
      <Check label="Enabled" name={`${idPrefix}-enabled`} checked={r.enabled} onChange={set('enabled')} />
      <button type="submit">{submitLabel}</button>
      {onCancel && <button type="button" class="secondary" onClick={onCancel}>Cancel</button>}
    </form>
  );
}

function ClassificationRules() {
  const rules = useFetch(() => api.get('/api/classification-rules'), []);
  const cats = useFetch(() => api.get('/api/classification-rules/categories'), []);
  const types = useFetch(() => api.get('/api/classification-rules/rule-types'), []);
  const [editing, setEditing] = useState(null);
  const [formKey, setFormKey] = useState(0);
  const list = rules.data || [];
  return (
    <section aria-labelledby="class-h">
      <h2 id="class-h">Classification rules</h2>
      <p class="muted">Besides the built-in rules, every enabled rule is evaluated, highest priority first; the category with the most matches wins.</p>
      <Failure error={rules.error} retry={rules.reload} />
      {rules.loading && !rules.data && <Loading what="classification rules" />}
      {rules.data && (list.length === 0 ? <p class="muted">No classification rules of your own.</p> : (
        <div class="table-wrap">
          <table id="class-table">
            <thead><tr><th scope="col">Name</th><th scope="col">Category</th><th scope="col">Rule</th><th scope="col" class="num">Priority</th>
              <th scope="col">Enabled</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
            <tbody>
              {list.map((r) => (editing === r.id ? (
                <tr key={r.id}><td colSpan={6}>
                  <ClassForm idPrefix={`class-${r.id}`} initial={r} categories={cats.data} types={types.data} submitLabel="Save rule"
                    onCancel={() => setEditing(null)}
                    onSubmit={(body) => run(() => api.put(`/api/classification-rules/${r.id}`, body), `Rule ${body.name} saved`, () => { setEditing(null); return rules.reload(); })} />
                </td></tr>
              ) : (
                <tr key={r.id}>
                  <td>{r.name}{!r.owner_id && <span class="badge">system</span>}</td>
                  <td>{(cats.data && cats.data[r.category]) || r.category}</td>
                  <td>{r.rule_type} <code>{r.pattern}</code></td>
                  <td class="num">{r.priority}</td>
                  <td>{mine(r) ? (
                    <Check label={<span class="sr">Enabled: {r.name}</span>} checked={r.enabled}
                      onChange={(v) => run(() => api.put(`/api/classification-rules/${r.id}`, { enabled: v }), `Rule ${r.name} ${v ? 'on' : 'off'}`, rules.reload)} />
                  ) : (r.enabled ? 'yes' : 'no')}</td>
                  <td class="actions">{mine(r) && (
                    <>
                      <button type="button" class="secondary" aria-label={`Edit ${r.name}`} onClick={() => setEditing(r.id)}>Edit</button>
                      <Confirm question={`Delete the classification rule ${r.name}?`} label={`Delete ${r.name}`}
                        onConfirm={() => run(() => api.del(`/api/classification-rules/${r.id}`), `Rule ${r.name} deleted`, rules.reload)}>Delete</Confirm>
                    </>
                  )}</td>
                </tr>
              )))}
            </tbody>
          </table>
        </div>
      ))}
      <h3>New classification rule</h3>
      <ClassForm key={formKey} idPrefix="new-class" initial={emptyClass} categories={cats.data} types={types.data} submitLabel="Add classification rule"
        onSubmit={(body) => run(() => api.post('/api/classification-rules', body), `Rule ${body.name} added`, () => { setFormKey(formKey + 1); return rules.reload(); })} />
    </section>
  );
}

export default function Rules() {
  return (
    <Page title="Rules">
      <RoutingRules />
      <ClassificationRules />
    </Page>
  );
}
