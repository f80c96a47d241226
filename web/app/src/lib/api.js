// The client of docflow's public REST API (the same routes scripts use;
// the pages call nothing else).
//
// Authentication is the session cookie the sign-in page set. Writes that a
// cookie authenticates are protected on the server by its cross-site check
// (the Origin header, or Sec-Fetch-Site without one, must be this site):
// every request here is made with mode "same-origin", so the browser sends
// the page's own Origin and never sends the cookie anywhere else. The pages
// never hold an API token.

export class ApiError extends Error {
  // fields: the server's per-field errors of a 422, {field: message}
  // (field as the API names it: "title", "ai_metadata.amount").
  constructor(status, detail, fields) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.fields = fields || {};
  }
}

function fieldsOf(body) {
  const out = {};
  for (const e of (body && body.errors) || []) if (e && e.field) out[e.field] = e.message || '';
  return out;
}

// detailOf turns an error body into one readable sentence: {"detail": "…"}
// or a validation list [{loc, msg}].
function detailOf(status, body) {
  const d = body && body.detail;
  if (typeof d === 'string' && d) return d;
  if (Array.isArray(d)) {
    return d.map((e) => (e.loc ? e.loc.filter((p) => p !== 'body').join('.') + ': ' : '') + (e.msg || '')).join('; ');
  }
  return `The server answered ${status}.`;
}

// toQuery builds "?a=1&b=2" from an object, skipping empty values.
export function toQuery(params) {
  if (!params) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

function signInAgain() {
  const next = location.pathname + location.search;
  location.assign('/login?next=' + encodeURIComponent(next));
}

// request sends one API request and returns the decoded JSON (or the
// Response itself with raw: true). A 401 sends the browser to sign in.
export async function request(method, path, { query, json, body, headers, signal, raw } = {}) {
  const init = { method, headers: { Accept: 'application/json', ...headers }, credentials: 'same-origin', mode: 'same-origin', signal };
  if (json !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(json);
  } else if (body !== undefined) {
    init.body = body;
  }
  const resp = await fetch(path + toQuery(query), init);
  if (resp.status === 401) {
    signInAgain();
    throw new ApiError(401, 'Your session ended: sign in again.');
  }
  if (!resp.ok) {
    let parsed = null;
    try {
      parsed = await resp.json();
    } catch {
      /* not JSON */
    }
    throw new ApiError(resp.status, detailOf(resp.status, parsed), fieldsOf(parsed));
  }
  if (raw) return resp;
  if (resp.status === 204) return null;
  const type = resp.headers.get('Content-Type') || '';
  return type.includes('json') ? resp.json() : resp.text();
}

export const api = {
  get: (path, query, opts) => request('GET', path, { ...opts, query }),
  post: (path, json, opts) => request('POST', path, { ...opts, json }),
  put: (path, json, opts) => request('PUT', path, { ...opts, json }),
  patch: (path, json, opts) => request('PATCH', path, { ...opts, json }),
  del: (path, opts) => request('DELETE', path, opts),
};

// upload sends one file as multipart field "file" with XMLHttpRequest,
// which (unlike fetch) reports upload progress: onProgress(sent, total).
// Returns {promise, abort}. Same-origin XHR carries the page's Origin, as
// the cross-site check needs.
export function upload(path, file, onProgress) {
  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    xhr.open('POST', path);
    xhr.withCredentials = false; // same origin: the cookie goes anyway
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.upload.onprogress = (e) => onProgress && onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onerror = () => reject(new ApiError(0, 'The upload could not reach the server.'));
    xhr.onabort = () => reject(new ApiError(0, 'Upload cancelled.'));
    xhr.onload = () => {
      let parsed = null;
      try {
        parsed = JSON.parse(xhr.responseText);
      } catch {
        /* not JSON */
      }
      if (xhr.status === 401) signInAgain();
      if (xhr.status >= 200 && xhr.status < 300) resolve(parsed);
      else reject(new ApiError(xhr.status, detailOf(xhr.status, parsed)));
    };
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}

// download posts JSON and saves the answer as a file (the bulk ZIP).
export async function downloadPost(path, json, fallbackName) {
  const resp = await request('POST', path, { json, raw: true, headers: { Accept: 'application/zip, application/json' } });
  const blob = await resp.blob();
  const cd = resp.headers.get('Content-Disposition') || '';
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
  const name = m ? decodeURIComponent(m[1]) : fallbackName;
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}
