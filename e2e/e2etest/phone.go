package e2etest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Phone makes the docflow app's calls as the app makes them: a bearer
// token in the Authorization header and JSON bodies (multipart for
// uploads).
type Phone struct {
	T     testing.TB
	Base  string // the server's URL
	Token string // "": no Authorization header
}

// Call sends body (nil: none; a Multipart: an upload; else JSON) and
// returns the status, the decoded object (nil when not one) and the raw
// answer.
func (p *Phone) Call(method, path string, body any) (int, map[string]any, string) {
	p.T.Helper()
	var r io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case Multipart:
		r, ctype = b.Body, b.ContentType
	default:
		j, _ := json.Marshal(b)
		r = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, p.Base+path, r)
	if p.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	if r != nil {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return resp.StatusCode, m, string(raw)
}
