package googledrive_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/googledrive"
	"docflow/internal/netguard"
)

// TestLive delivers to a real Google Drive when
// GOOGLE_DRIVE_LIVE_REFRESH_TOKEN, GOOGLE_DRIVE_LIVE_CLIENT_ID and
// GOOGLE_DRIVE_LIVE_CLIENT_SECRET are set (GOOGLE_DRIVE_LIVE_FOLDER_ID,
// default root, is the folder used).
func TestLive(t *testing.T) {
	rt, id, secret := os.Getenv("GOOGLE_DRIVE_LIVE_REFRESH_TOKEN"), os.Getenv("GOOGLE_DRIVE_LIVE_CLIENT_ID"), os.Getenv("GOOGLE_DRIVE_LIVE_CLIENT_SECRET")
	if rt == "" || id == "" || secret == "" {
		t.Skip("live Google Drive test: set GOOGLE_DRIVE_LIVE_REFRESH_TOKEN, GOOGLE_DRIVE_LIVE_CLIENT_ID and GOOGLE_DRIVE_LIVE_CLIENT_SECRET to run it")
	}
	c, err := googledrive.New(googledrive.Config{FolderID: os.Getenv("GOOGLE_DRIVE_LIVE_FOLDER_ID"), RefreshToken: rt, ClientID: id, ClientSecret: secret},
		googledrive.Options{HTTP: netguard.Client(netguard.ClientOptions{}), ChunkSize: 16 * googledrive.ChunkUnit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Probe(ctx); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, data := range [][]byte{[]byte("docflow live test\n"), bytes.Repeat([]byte("docflow "), (9<<20)/8)} {
		got, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "docflow-live.txt", MimeType: "text/plain", Size: int64(len(data))}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = got
		} else if got != first {
			t.Fatalf("second delivery made file %s, not a new version of %s", got, first)
		}
		t.Logf("delivered %d bytes to file %s", len(data), got)
	}
}
