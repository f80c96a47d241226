package dropbox_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/dropbox"
	"docflow/internal/netguard"
)

// TestLive delivers to a real Dropbox account when
// DROPBOX_LIVE_REFRESH_TOKEN, DROPBOX_LIVE_APP_KEY and
// DROPBOX_LIVE_APP_SECRET are set (DROPBOX_LIVE_PATH, default
// /docflow-live-test, is the folder used).
func TestLive(t *testing.T) {
	rt, key, secret := os.Getenv("DROPBOX_LIVE_REFRESH_TOKEN"), os.Getenv("DROPBOX_LIVE_APP_KEY"), os.Getenv("DROPBOX_LIVE_APP_SECRET")
	if rt == "" || key == "" || secret == "" {
		t.Skip("live Dropbox test: set DROPBOX_LIVE_REFRESH_TOKEN, DROPBOX_LIVE_APP_KEY and DROPBOX_LIVE_APP_SECRET to run it")
	}
	folder := os.Getenv("DROPBOX_LIVE_PATH")
	if folder == "" {
		folder = "/docflow-live-test"
	}
	c, err := dropbox.New(dropbox.Config{Folder: dropbox.Folder(folder), RefreshToken: rt, AppKey: key, AppSecret: secret},
		dropbox.Options{HTTP: netguard.Client(netguard.ClientOptions{}), ChunkSize: 4 << 20})
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
	for _, data := range [][]byte{[]byte("docflow live test\n"), bytes.Repeat([]byte("docflow "), (9<<20)/8)} {
		got, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "docflow-live.txt", Size: int64(len(data))}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("delivered %d bytes to %s", len(data), got)
	}
}
