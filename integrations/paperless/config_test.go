package paperless_test

import (
	"testing"

	"docflow"
	"docflow/integrations/paperless"
)

func TestParseConfig(t *testing.T) {
	c, err := paperless.ParseConfig(&docflow.Integration{Config: map[string]any{"url": " https://docs.example.com/paperless/ "},
		Credentials: map[string]string{"token": "t"}})
	if err != nil || c.URL != "https://docs.example.com/paperless/" || c.Token != "t" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, u := range []string{"", "ftp://x", "https://user:pw@x", "/relative"} {
		if _, err := paperless.ParseConfig(&docflow.Integration{Config: map[string]any{"url": u}, Credentials: map[string]string{"token": "t"}}); err == nil {
			t.Errorf("url %q accepted", u)
		}
	}
	if _, err := paperless.ParseConfig(&docflow.Integration{Config: map[string]any{"url": "https://x"}}); err == nil {
		t.Fatal("missing token accepted")
	}
	if _, err := paperless.New(paperless.Config{URL: "https://x", Token: "t", CACertificate: "not a certificate"}, paperless.Options{}); err == nil {
		t.Fatal("a CA that is no certificate accepted")
	}
}
