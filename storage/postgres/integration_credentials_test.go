package postgres_test

import (
	"context"
	"testing"

	"docflow"
)

// A rotated refresh token replaces the stored one only while that is
// still the one the client started from, and leaves updated_at alone.
func TestRotateIntegrationCredential(t *testing.T) {
	ctx := context.Background()
	s, _ := newIntegrationStore(t)
	in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionDestination, IntegrationType: "ONEDRIVE", Name: "drive",
		Config: map[string]any{"path": "/"}, IsActive: true,
		Credentials: map[string]string{"refresh_token": "rt-1", "client_id": "id", "client_secret": "secret"}}
	if err := s.CreateIntegration(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	before, err := s.GetIntegration(ctx, "ann", in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RotateIntegrationCredential(ctx, in.ID, "refresh_token", "rt-1", "rt-2"); !ok || err != nil {
		t.Fatalf("rotate: %v %v", ok, err)
	}
	if ok, err := s.RotateIntegrationCredential(ctx, in.ID, "refresh_token", "rt-1", "rt-3"); ok || err != nil {
		t.Fatalf("rotate from a stale value: %v %v", ok, err)
	}
	got, err := s.IntegrationWithCredentials(ctx, "ann", in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Credentials["refresh_token"] != "rt-2" || got.Credentials["client_secret"] != "secret" || !got.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("credentials %v, updated %v → %v", got.Credentials, before.UpdatedAt, got.UpdatedAt)
	}
	if _, err := s.RotateIntegrationCredential(ctx, 999999, "refresh_token", "a", "b"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing: %v", err)
	}
}
