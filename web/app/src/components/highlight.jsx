// Highlighted renders a search snippet whose matches the search API marks
// with <mark>…</mark>: the text is split on exactly those two tags and
// every piece is rendered as text, so anything else in it (a "<script>"
// in a document's text) shows as the characters it is.
export function splitMarks(s) {
  const parts = [];
  const re = /<mark>([\s\S]*?)<\/mark>/g;
  let last = 0;
  let m;
  while ((m = re.exec(s)) !== null) {
    if (m.index > last) parts.push({ text: s.slice(last, m.index), mark: false });
    parts.push({ text: m[1], mark: true });
    last = re.lastIndex;
  }
  if (last < s.length) parts.push({ text: s.slice(last), mark: false });
  return parts;
}

export function Highlighted({ text }) {
  if (!text) return null;
  return (
    <>
      {splitMarks(String(text)).map((p, i) => (p.mark ? <mark key={i}>{p.text}</mark> : p.text))}
    </>
  );
}
