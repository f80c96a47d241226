package onedrive_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/onedrive"
	"docflow/internal/netguard"
)

// TestLive delivers to a real OneDrive when ONEDRIVE_LIVE_REFRESH_TOKEN,
// ONEDRIVE_LIVE_CLIENT_ID and ONEDRIVE_LIVE_CLIENT_SECRET are set
// (ONEDRIVE_LIVE_TENANT, default common; ONEDRIVE_LIVE_PATH, default
// /docflow-live-test).
func TestLive(t *testing.T) {
	rt, id, secret := os.Getenv("ONEDRIVE_LIVE_REFRESH_TOKEN"), os.Getenv("ONEDRIVE_LIVE_CLIENT_ID"), os.Getenv("ONEDRIVE_LIVE_CLIENT_SECRET")
	if rt == "" || id == "" || secret == "" {
		t.Skip("live OneDrive test: set ONEDRIVE_LIVE_REFRESH_TOKEN, ONEDRIVE_LIVE_CLIENT_ID and ONEDRIVE_LIVE_CLIENT_SECRET to run it")
	}
	folder := os.Getenv("ONEDRIVE_LIVE_PATH")
	if folder == "" {
		folder = "/docflow-live-test"
	}
	c, err := onedrive.New(onedrive.Config{Folder: onedrive.Folder(folder), Tenant: os.Getenv("ONEDRIVE_LIVE_TENANT"),
		RefreshToken: rt, ClientID: id, ClientSecret: secret},
		onedrive.Options{HTTP: netguard.Client(netguard.ClientOptions{}), ChunkSize: 16 * onedrive.FragmentUnit})
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
	for _, data := range [][]byte{[]byte("docflow live test\n"), bytes.Repeat([]byte("docflow "), (12<<20)/8)} {
		got, err := c.Deliver(ctx, docflow.DestinationDoc{Name: "docflow-live.txt", Size: int64(len(data))}, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("delivered %d bytes to %s", len(data), got)
	}
}
