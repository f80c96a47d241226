package s3

import (
	"testing"

	"docflow"
	"docflow/internal/netguard"
)

func TestParseConfig(t *testing.T) {
	in := &docflow.Integration{IntegrationType: docflow.IntegrationS3,
		Config:      map[string]any{"bucket": "docs", "prefix": "/scans/2026/", "endpoint": "https://s3.example.com"},
		Credentials: map[string]string{"access_key_id": "a", "secret_access_key": "s"}}
	cfg, err := ParseConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Prefix != "scans/2026/" || cfg.Region != "us-east-1" || cfg.PathStyle {
		t.Fatalf("%+v", cfg)
	}
	c, err := New(cfg, netguard.Dialer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Location(); got != "bucket docs, prefix scans/2026/ at https://s3.example.com" {
		t.Fatal(got)
	}
	for _, bad := range []map[string]any{
		{"bucket": ""}, {"bucket": "b", "endpoint": "ftp://x"}, {"bucket": "b", "prefix": "a/../b"},
		{"bucket": "b", "endpoint": "https://u:p@x"},
	} {
		if _, err := ParseConfig(&docflow.Integration{Config: bad, Credentials: in.Credentials}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := ParseConfig(&docflow.Integration{Config: in.Config}); err == nil {
		t.Error("no credentials accepted")
	}
	in.Config["ca_certificate"] = "not a certificate"
	if _, err := NewIntegration(in, netguard.Dialer{}, ""); err == nil {
		t.Error("a CA that does not parse accepted")
	}
}

// AWS_REGION is the region of an integration that names none; its own
// region wins.
func TestNewIntegrationRegion(t *testing.T) {
	creds := map[string]string{"access_key_id": "a", "secret_access_key": "s"}
	for _, c := range []struct {
		config  map[string]any
		setting string
		want    string
	}{
		{map[string]any{"bucket": "b"}, "eu-central-1", "eu-central-1"},
		{map[string]any{"bucket": "b", "region": "ap-east-1"}, "eu-central-1", "ap-east-1"},
		{map[string]any{"bucket": "b"}, "", "us-east-1"},
	} {
		dc, err := NewIntegration(&docflow.Integration{IntegrationType: docflow.IntegrationS3, Config: c.config, Credentials: creds}, netguard.Dialer{}, c.setting)
		if err != nil {
			t.Fatal(err)
		}
		if got := dc.(*Client).cfg.Region; got != c.want {
			t.Errorf("%v with AWS_REGION %q: region %q, want %q", c.config, c.setting, got, c.want)
		}
	}
}
