// The status line: short messages ("3 documents deleted", an error) read
// out by screen readers through a live region, each gone after a while.
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set();
let seq = 0;

// notify shows a message; kind is "ok" or "error".
export function notify(text, kind = 'ok') {
  const n = { id: ++seq, text: String(text), kind };
  listeners.forEach((l) => l(n));
}

export function Notices() {
  const [items, setItems] = useState([]);
  useEffect(() => {
    const add = (n) => {
      setItems((xs) => [...xs.slice(-3), n]);
      setTimeout(() => setItems((xs) => xs.filter((x) => x.id !== n.id)), n.kind === 'error' ? 12000 : 5000);
    };
    listeners.add(add);
    return () => listeners.delete(add);
  }, []);
  return (
    <div class="notices" role="status" aria-live="polite">
      {items.map((n) => (
        <p key={n.id} class={'notice ' + n.kind}>{n.text}</p>
      ))}
    </div>
  );
}
