package dropbox_test

import (
	"testing"

	"docflow"
	"docflow/integrations/dropbox"
)

func TestParseConfig(t *testing.T) {
	in := &docflow.Integration{Config: map[string]any{"path": "/Scans/2026/"},
		Credentials: map[string]string{"refresh_token": "r", "app_key": "k", "app_secret": "s"}}
	c, err := dropbox.ParseConfig(in)
	if err != nil || c.Folder != "/Scans/2026" || c.RefreshToken != "r" || c.AppKey != "k" || c.AppSecret != "s" {
		t.Fatalf("%+v %v", c, err)
	}
	for p, want := range map[string]string{"": "", "/": "", "a/b": "/a/b", "/a/../b/": "/b", "/..": ""} {
		if got := dropbox.Folder(p); got != want {
			t.Errorf("%q: %q, want %q", p, got, want)
		}
	}
	if _, err := dropbox.ParseConfig(&docflow.Integration{Credentials: map[string]string{"refresh_token": "r"}}); err == nil {
		t.Fatal("missing credentials accepted")
	}
}
