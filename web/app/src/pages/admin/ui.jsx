// What the management pages (/pipelines, /rules, /integrations, /webhooks,
// /tokens, /users, /audit) share: labelled fields, a yes/no cell, a
// confirm-then-act button, a pager, a delivery log and run(), which
// reports an action's outcome in the status line. Everything renders user
// data as JSX text or attributes, which Preact escapes.
import { useState } from 'preact/hooks';
import { notify } from '../../components/notices.jsx';
import { date, ms } from '../../lib/format.js';

let seq = 0;
// uid gives an element id for a label's "for".
export function uid(prefix) {
  seq += 1;
  return `${prefix}-${seq}`;
}

// run awaits action(), then reports ok (a text, or a function of the
// result) in the status line and calls after(result); a failure is
// reported with the server's detail and returns undefined.
export async function run(action, ok, after) {
  try {
    const r = await action();
    if (ok) notify(typeof ok === 'function' ? ok(r) : ok);
    if (after) await after(r);
    return r === undefined ? true : r;
  } catch (e) {
    notify(e.detail || e.message || String(e), 'error');
    return undefined;
  }
}

// Text is a labelled input; value and onInput(value).
export function Text({ label, value, onInput, type = 'text', required, hint, name, ...rest }) {
  const [id] = useState(() => uid(name || 'f'));
  return (
    <div class="field">
      <label for={id}>{label}{required && <span aria-hidden="true"> *</span>}</label>
      <input id={id} name={name} type={type} value={value ?? ''} required={required}
        aria-describedby={hint ? id + '-hint' : undefined}
        onInput={(e) => onInput(e.currentTarget.value)} {...rest} />
      {hint && <small id={id + '-hint'} class="muted">{hint}</small>}
    </div>
  );
}

// Area is a labelled textarea.
export function Area({ label, value, onInput, hint, name, rows = 4 }) {
  const [id] = useState(() => uid(name || 'a'));
  return (
    <div class="field wide-field">
      <label for={id}>{label}</label>
      <textarea id={id} name={name} rows={rows} value={value ?? ''} aria-describedby={hint ? id + '-hint' : undefined}
        onInput={(e) => onInput(e.currentTarget.value)} />
      {hint && <small id={id + '-hint'} class="muted">{hint}</small>}
    </div>
  );
}

// Choice is a labelled select of options ([value, text] pairs or strings).
export function Choice({ label, value, onChange, options, name, required }) {
  const [id] = useState(() => uid(name || 's'));
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} name={name} value={value ?? ''} required={required} onChange={(e) => onChange(e.currentTarget.value)}>
        {options.map((o) => {
          const [v, t] = Array.isArray(o) ? o : [o, o];
          return <option key={v} value={v}>{t}</option>;
        })}
      </select>
    </div>
  );
}

// Check is a labelled checkbox.
export function Check({ label, checked, onChange, name }) {
  const [id] = useState(() => uid(name || 'c'));
  return (
    <div class="field check-field">
      <input id={id} name={name} type="checkbox" checked={!!checked} onChange={(e) => onChange(e.currentTarget.checked)} />
      <label for={id}>{label}</label>
    </div>
  );
}

export function YesNo({ value }) {
  return <span class={value ? 'ok' : 'muted'}>{value ? 'yes' : 'no'}</span>;
}

// Confirm is a button that asks before doing what it says.
export function Confirm({ children, question, onConfirm, class: cls = 'danger', label }) {
  return (
    <button type="button" class={cls} aria-label={label}
      onClick={() => window.confirm(question) && onConfirm()}>
      {children}
    </button>
  );
}

// Pager moves through pages of a listing ({page, pages, total}).
export function Pager({ page, pages, total, onPage, what }) {
  if (!pages || pages <= 1) return total != null ? <p class="muted">{total} {what}</p> : null;
  return (
    <nav class="row pager" aria-label={`Pages of ${what}`}>
      <button type="button" class="secondary" disabled={page <= 1} onClick={() => onPage(page - 1)}>Previous</button>
      <span>Page {page} of {pages} ({total} {what})</span>
      <button type="button" class="secondary" disabled={page >= pages} onClick={() => onPage(page + 1)}>Next</button>
    </nav>
  );
}

// DeliveryLog shows a delivery log ({deliveries: [...]} of webhooks and
// hooks): each delivery with its attempts; redeliver, when given, offers
// to send one again.
export function DeliveryLog({ data, redeliver }) {
  const rows = (data && data.deliveries) || [];
  if (!rows.length) return <p class="muted">No deliveries yet.</p>;
  return (
    <div class="table-wrap">
      <table>
        <caption class="sr">Deliveries, newest first</caption>
        <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th>
          <th scope="col">Last answer</th><th scope="col">When</th>{redeliver && <th scope="col"><span class="sr">Actions</span></th>}</tr></thead>
        <tbody>
          {rows.map((d) => (
            <tr key={d.id}>
              <td><code>{d.event}</code><br /><small class="muted">{d.event_id}</small></td>
              <td class={d.status === 'delivered' ? 'ok' : d.status === 'failed' || d.status === 'given_up' ? 'error' : ''}>{d.status}</td>
              <td class="num">{(d.attempts && d.attempts.length) || d.attempt || 0}</td>
              <td>{d.status_code ? `HTTP ${d.status_code}` : ''}{d.duration_ms != null ? ` · ${ms(d.duration_ms)}` : ''}
                {d.error && <div class="error">{d.error}</div>}</td>
              <td>{date(d.delivered_at || d.next_attempt_at || (d.attempts && d.attempts.length && d.attempts[d.attempts.length - 1].attempted_at))}
                {d.next_attempt_at && <div class="muted">next try {date(d.next_attempt_at)}</div>}</td>
              {redeliver && <td><button type="button" class="secondary" onClick={() => redeliver(d)}>Send again</button></td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

// parseJSON reads a JSON object typed into a textarea ("" is {}); a
// mistake is thrown with the field's name.
export function parseJSON(text, field) {
  if (!text || !text.trim()) return {};
  try {
    const v = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  } catch {
    /* reported below */
  }
  throw new Error(`${field} must be a JSON object, such as {"key": "value"}`);
}
