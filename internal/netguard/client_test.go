package netguard

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// A client reaches a loopback server only when the dialer admits it, and
// follows redirects only as far as it was told.
func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hop" {
			http.Redirect(w, r, "/end", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	if _, err := Client(ClientOptions{}).Get(srv.URL + "/end"); !errors.Is(err, ErrPrivate) {
		t.Fatalf("loopback without a rule admitting it: %v", err)
	}
	open := Client(ClientOptions{Dialer: Dialer{AllowPrivate: true}})
	resp, err := open.Get(srv.URL + "/hop")
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("no redirects followed: %v %v", resp, err)
	}
	resp.Body.Close()
	follow := Client(ClientOptions{Dialer: Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}, Redirects: 1})
	resp, err = follow.Get(srv.URL + "/hop")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("one redirect followed: %v %v", resp, err)
	}
	resp.Body.Close()
}
