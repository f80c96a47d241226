// Package browser holds the tests of docflow's pages in headless Chromium,
// each against a whole process built by internal/app's test twin,
// apptest: the documents pages (web_browser_test.go: upload, search,
// comments, shares, annotations, accessibility, escaping), the management
// pages (admin_pages_browser_test.go), /settings
// (settings_browser_test.go), /ops (ops_browser_test.go), /qr-login
// (qr_login_browser_test.go) and the API reference at /docs
// (docs_browser_test.go). chromium_test.go starts the browser and holds
// the helpers every test uses (console errors, a screenshot of a failure,
// evaluating and waiting for the page). The tests skip without chromium
// on PATH (scripts/install-deps.sh test) or without the built pages (make
// web). The API's own tests are e2e/api's; they run as a package of their
// own so that go test runs the two side by side.
package browser
