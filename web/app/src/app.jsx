// The application: the layout (skip link, navigation, the signed-in user,
// sign-out, the status line) around the client router.
import { LocationProvider, Router, Route, ErrorBoundary, useLocation } from 'preact-iso';
import { useState, useEffect } from 'preact/hooks';
import { routes, serverLinks, inScope } from './routes.js';
import { session } from './lib/session.js';
import { Notices } from './components/notices.jsx';
import NotFound from './pages/NotFound.jsx';

function visible(item) {
  return !item.admin || session.admin;
}

function Nav() {
  const { path } = useLocation();
  const [open, setOpen] = useState(false);
  useEffect(() => setOpen(false), [path]);
  const current = (r) => (r.path === '/' ? path === '/' : path === r.path || path.startsWith(r.path + '/'));
  return (
    <nav aria-label="Main" class={open ? 'main-nav open' : 'main-nav'}>
      <button type="button" class="menu-toggle" aria-expanded={open ? 'true' : 'false'} aria-controls="nav-list" onClick={() => setOpen(!open)}>
        Menu
      </button>
      <ul id="nav-list">
        {routes.filter((r) => r.nav && visible(r)).map((r) => (
          <li key={r.path}>
            <a href={r.path} aria-current={current(r) ? 'page' : undefined}>{r.title}</a>
          </li>
        ))}
        {serverLinks.filter(visible).map((l) => (
          <li key={l.href}><a href={l.href}>{l.title}</a></li>
        ))}
      </ul>
    </nav>
  );
}

function UserBox() {
  if (session.single_user) {
    return <p class="user"><span title="AUTH_ENABLED is false: everyone who reaches this address is the administrator">Single-user mode</span></p>;
  }
  return (
    <div class="user">
      <span class="user-name">{session.name || session.id}</span>
      {session.admin && <span class="badge">admin</span>}
      {session.can_sign_out ? (
        <form method="post" action="/logout">
          <button type="submit" class="link">Sign out</button>
        </form>
      ) : (
        <a href="/login">Sign in</a>
      )}
    </div>
  );
}

export function App() {
  return (
    <LocationProvider scope={inScope}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="bar">
        <a class="brand" href="/">docflow</a>
        <Nav />
        <UserBox />
      </header>
      <main id="main" tabindex="-1">
        <ErrorBoundary>
          <Router>
            {routes.filter(visible).map((r) => <Route key={r.path} path={r.path} component={r.page} />)}
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </main>
      <Notices />
    </LocationProvider>
  );
}
