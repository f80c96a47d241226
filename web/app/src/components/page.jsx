// Page: the frame of every page: sets the document title, renders the
// heading, and moves keyboard focus to it when the route changes (so a
// screen reader announces the new page).
import { useEffect, useRef } from 'preact/hooks';

export function Page({ title, heading, actions, wide, children }) {
  const h1 = useRef(null);
  useEffect(() => {
    document.title = title ? `${title} · docflow` : 'docflow';
  }, [title]);
  useEffect(() => {
    if (h1.current && document.activeElement !== h1.current && !h1.current.contains(document.activeElement)) {
      h1.current.focus({ preventScroll: true });
    }
  }, []);
  return (
    <div class={wide ? 'page wide' : 'page'}>
      <div class="page-head">
        <h1 tabindex="-1" ref={h1}>{heading || title}</h1>
        {actions && <div class="page-actions">{actions}</div>}
      </div>
      {children}
    </div>
  );
}

// Loading and failure states shared by the pages.
export function Loading({ what }) {
  return <p class="muted" role="status">Loading {what || ''}…</p>;
}

export function Failure({ error, retry }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <p>{error.detail || error.message || String(error)}</p>
      {retry && <button type="button" onClick={retry}>Try again</button>}
    </div>
  );
}
