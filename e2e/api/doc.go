// Package api holds the tests of the HTTP API as `docflow serve`, `api`
// and `worker` build it (internal/app's test twin, apptest): every
// resource mounted with its real dependencies, sign-in limits, single
// sign-on against a real OpenID Connect provider, IMAP sources, metrics,
// the /ops page and the web pages (web_browser_test.go: upload, search,
// comments, shares, annotations, accessibility, escaping) and the API
// reference at /docs (docs_browser_test.go) in headless
// Chromium. The tests of one resource at a time, on a bare server, stay in
// package http, whose test binary then links no adapter.
package api
