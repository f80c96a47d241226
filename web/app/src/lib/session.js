// The signed-in user, as the server wrote it into the page shell
// (<meta name="docflow-session" content="{…}">): the pages need no extra
// request to know who they work for. Fields: id, name, admin,
// single_user (AUTH_ENABLED=false), can_sign_out (a session cookie, not a
// token), version.
function read() {
  const el = document.querySelector('meta[name="docflow-session"]');
  if (!el) return { id: '', name: '', admin: false, single_user: false, can_sign_out: false, version: '' };
  try {
    return JSON.parse(el.getAttribute('content'));
  } catch {
    return { id: '', name: '', admin: false, single_user: false, can_sign_out: false, version: '' };
  }
}

export const session = read();
