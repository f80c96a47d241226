// The pages: one entry per route. path uses preact-iso's patterns
// (":id" is a parameter); nav puts the page in the navigation; admin hides
// it from users who are no administrators (the API refuses them anyway).
// Each page is its own chunk, loaded when first opened.
//
// The server answers each path with the application's page
// (http/app.go's appPages lists the same paths): a new page needs a line
// here and one there.
import { lazy } from 'preact-iso';

export const routes = [
  { path: '/', title: 'Documents', nav: true, page: lazy(() => import('./pages/Documents.jsx')) },
  { path: '/files/:id', title: 'Document', page: lazy(() => import('./pages/File.jsx')) },
  { path: '/pipelines', title: 'Pipelines', nav: true, page: lazy(() => import('./pages/Pipelines.jsx')) },
  { path: '/rules', title: 'Rules', nav: true, page: lazy(() => import('./pages/Rules.jsx')) },
  { path: '/integrations', title: 'Integrations', nav: true, page: lazy(() => import('./pages/Integrations.jsx')) },
  { path: '/webhooks', title: 'Webhooks', nav: true, admin: true, page: lazy(() => import('./pages/Webhooks.jsx')) },
  { path: '/tokens', title: 'API tokens', nav: true, page: lazy(() => import('./pages/Tokens.jsx')) },
  { path: '/users', title: 'Users', nav: true, admin: true, page: lazy(() => import('./pages/Users.jsx')) },
  { path: '/audit', title: 'Audit log', nav: true, admin: true, page: lazy(() => import('./pages/Audit.jsx')) },
];

// Links outside the application (server-rendered pages) the navigation
// shows after the pages above; the browser loads them itself.
export const serverLinks = [
  { href: '/ops', title: 'Operations', admin: true },
  { href: '/status', title: 'Status' },
  { href: '/docs', title: 'API reference' },
];

// inScope tells the client router which links are its own: the paths of
// the routes above. Every other link (/docs, /ops, downloads) is left to
// the browser.
export const inScope = new RegExp(
  '^(' +
    routes
      .map((r) => (r.path === '/' ? '/(?:[?#]|$)' : r.path.replace(/:[a-z]+/g, '[^/?#]+') + '(?:[/?#]|$)'))
      .join('|') +
    ')',
);
