// Package api holds the tests of the HTTP API as `docflow serve`, `api`
// and `worker` build it (internal/app's test twin, apptest): every
// resource mounted with its real dependencies, sign-in limits, single
// sign-on against a real OpenID Connect provider, IMAP sources, metrics,
// QR sign-in, the mobile app's calls and the OpenAPI description. The
// pages in a browser are e2e/browser's; what both packages call a process
// with (the app's client, an upload's body) is e2e/e2etest's. The tests
// of one resource at a time, on a bare server, stay in package http,
// whose test binary then links no adapter.
package api
