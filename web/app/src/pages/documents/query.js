// The documents page keeps its state (search, filters, sort, page) in the
// address's query string, so links, reloads and Back show the same list.
// toListQuery and toSearchQuery turn it into the API's parameters.

export const defaults = { q: '', status: '', type: '', from: '', to: '', tags: '', owner: '', shared: '', sort: 'created_at', order: 'desc', page: '1', per: '25' };

export function readState(query) {
  const s = { ...defaults };
  for (const k of Object.keys(defaults)) if (query[k] != null) s[k] = String(query[k]);
  return s;
}

// toURL is the page's address for a state (defaults left out).
export function toURL(state) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(state)) if (v !== '' && v !== defaults[k]) q.set(k, v);
  const s = q.toString();
  return '/' + (s ? '?' + s : '');
}

// GET /api/files parameters.
export function toListQuery(s) {
  return {
    page: s.page, per_page: s.per, sort_by: s.sort, sort_order: s.order,
    status: s.status, mime_type: s.type, date_from: s.from, date_to: s.to, tags: s.tags,
    owner: s.owner, shared_with_me: s.shared ? 'true' : '',
  };
}

function unix(day, endOfDay) {
  if (!day) return '';
  const t = Date.parse(day + (endOfDay ? 'T23:59:59Z' : 'T00:00:00Z'));
  return isNaN(t) ? '' : String(Math.floor(t / 1000));
}

// GET /api/search parameters (the search API filters by one tag).
export function toSearchQuery(s) {
  return {
    q: s.q, page: s.page, per_page: Math.min(Number(s.per) || 20, 100), mime_type: s.type,
    tags: s.tags.split(',')[0].trim(), date_from: unix(s.from, false), date_to: unix(s.to, true),
  };
}

export const statuses = ['pending', 'processing', 'completed', 'failed', 'duplicate'];
export const types = [
  ['application/pdf', 'PDF'],
  ['image/png', 'PNG image'],
  ['image/jpeg', 'JPEG image'],
  ['image/tiff', 'TIFF image'],
  ['text/plain', 'Text'],
  ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'Word document'],
];
export const inProgress = (st) => st === 'pending' || st === 'processing' || st === 'queued';
