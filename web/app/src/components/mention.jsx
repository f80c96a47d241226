// MentionInput: a text area that completes @mentions. Typing "@" and the
// start of a name lists the matching users of GET /api/users/mentionable
// (read once per page); arrow keys choose, Enter or Tab inserts
// "@user_id ", Escape closes the list. The list is an ARIA combobox.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api.js';

let mentionable = null;
function loadMentionable() {
  if (!mentionable) mentionable = api.get('/api/users/mentionable').then((xs) => xs || [], () => []);
  return mentionable;
}

// The "@word" being typed just before the caret, or null.
function currentMention(text, caret) {
  const m = /(^|\s)@([^\s@]*(?:@[^\s@]*)?)$/.exec(text.slice(0, caret));
  return m ? { start: caret - m[2].length - 1, word: m[2] } : null;
}

let seq = 0;

export function MentionInput({ id, label, value, onInput, placeholder, rows = 3 }) {
  const ref = useRef(null);
  const [users, setUsers] = useState([]);
  const [open, setOpen] = useState(null); // {start, word, matches}
  const [active, setActive] = useState(0);
  const listID = useRef('mention-list-' + ++seq);
  useEffect(() => {
    loadMentionable().then(setUsers);
  }, []);

  const update = (text, caret) => {
    const m = currentMention(text, caret);
    if (!m) return setOpen(null);
    const w = m.word.toLowerCase();
    const matches = users
      .filter((u) => (u.user_id || '').toLowerCase().startsWith(w) || (u.display_name || '').toLowerCase().startsWith(w))
      .slice(0, 8);
    setActive(0);
    setOpen(matches.length ? { ...m, matches } : null);
  };

  const choose = (u) => {
    const el = ref.current;
    const caret = el.selectionStart;
    const text = value.slice(0, open.start) + '@' + u.user_id + ' ' + value.slice(caret);
    onInput(text);
    setOpen(null);
    const pos = open.start + u.user_id.length + 2;
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(pos, pos);
    });
  };

  const onKeyDown = (e) => {
    if (!open) return;
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setActive((active + 1) % open.matches.length);
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((active - 1 + open.matches.length) % open.matches.length);
    } else if (e.key === 'Enter' || e.key === 'Tab') {
      e.preventDefault();
      choose(open.matches[active]);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      setOpen(null);
    }
  };

  return (
    <div class="mention">
      <label for={id}>{label}</label>
      <textarea
        id={id}
        ref={ref}
        rows={rows}
        value={value}
        placeholder={placeholder}
        role="combobox"
        aria-autocomplete="list"
        aria-expanded={open ? 'true' : 'false'}
        aria-controls={listID.current}
        aria-activedescendant={open ? listID.current + '-' + active : undefined}
        onInput={(e) => {
          onInput(e.currentTarget.value);
          update(e.currentTarget.value, e.currentTarget.selectionStart);
        }}
        onKeyDown={onKeyDown}
        onBlur={() => setTimeout(() => setOpen(null), 150)}
      />
      <ul id={listID.current} role="listbox" class="mention-list" hidden={!open} aria-label="People to mention">
        {open &&
          open.matches.map((u, i) => (
            <li
              key={u.user_id}
              id={listID.current + '-' + i}
              role="option"
              aria-selected={i === active ? 'true' : 'false'}
              class={i === active ? 'active' : undefined}
              onMouseDown={(e) => {
                e.preventDefault();
                choose(u);
              }}
            >
              <strong>{u.display_name || u.user_id}</strong> <span class="muted">@{u.user_id}</span>
            </li>
          ))}
      </ul>
    </div>
  );
}
