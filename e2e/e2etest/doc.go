// Package e2etest holds what the whole-process test packages share:
// e2e/api (the HTTP API) and e2e/browser (the web pages in headless
// Chromium) both drive a process apptest built, and call it as a client
// does.
//
// Files:
//   - phone.go: Phone, the docflow app's calls as the app makes them
//     (a bearer token, JSON bodies).
//   - multipart.go: Multipart, a file upload's body for Phone.Call and
//     plain requests.
package e2etest
