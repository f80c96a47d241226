package onedrive_test

import (
	"testing"

	"docflow"
	"docflow/integrations/onedrive"
)

func TestParseConfig(t *testing.T) {
	creds := map[string]string{"refresh_token": "r", "client_id": "i", "client_secret": "s"}
	c, err := onedrive.ParseConfig(&docflow.Integration{Config: map[string]any{"path": "Documents/Scans/"}, Credentials: creds})
	if err != nil || c.Folder != "/Documents/Scans" || c.Tenant != "common" || c.ClientID != "i" {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = onedrive.ParseConfig(&docflow.Integration{Config: map[string]any{"tenant": "contoso.onmicrosoft.com"}, Credentials: creds})
	if err != nil || c.Tenant != "contoso.onmicrosoft.com" || c.Folder != "" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := onedrive.ParseConfig(&docflow.Integration{Config: map[string]any{"tenant": "a/b"}, Credentials: creds}); err == nil {
		t.Fatal("tenant with a slash accepted")
	}
	if _, err := onedrive.ParseConfig(&docflow.Integration{}); err == nil {
		t.Fatal("missing credentials accepted")
	}
}
