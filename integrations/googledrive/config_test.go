package googledrive_test

import (
	"testing"

	"docflow"
	"docflow/integrations/googledrive"
)

func TestParseConfig(t *testing.T) {
	creds := map[string]string{"refresh_token": "r", "client_id": "i", "client_secret": "s"}
	c, err := googledrive.ParseConfig(&docflow.Integration{Config: map[string]any{}, Credentials: creds})
	if err != nil || c.FolderID != "root" || c.RefreshToken != "r" {
		t.Fatalf("%+v %v", c, err)
	}
	c, err = googledrive.ParseConfig(&docflow.Integration{Config: map[string]any{"folder_id": " 1AbC "}, Credentials: creds})
	if err != nil || c.FolderID != "1AbC" {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := googledrive.ParseConfig(&docflow.Integration{}); err == nil {
		t.Fatal("missing credentials accepted")
	}
}
