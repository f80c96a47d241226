package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

func newIntegrationStore(t *testing.T) (*postgres.IntegrationStore, *postgres.DB) {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "integrations")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	c, err := postgres.NewCipher(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	return postgres.NewIntegrationStore(db, c), db
}

func imapRecord(owner string) *docflow.Integration {
	return &docflow.Integration{OwnerID: owner, Direction: docflow.DirectionSource, IntegrationType: "IMAP", Name: "mail",
		Config:      map[string]any{"host": "mail.example.com", "port": 993},
		Credentials: map[string]string{"username": "ann", "password": "hunter2-secret"}, IsActive: true}
}

func localRecord(owner string, active bool) *docflow.Integration {
	return &docflow.Integration{OwnerID: owner, Direction: docflow.DirectionDestination, IntegrationType: "LOCAL",
		Name: "folder", Config: map[string]any{"path": "out"}, IsActive: active}
}

func setTier(t *testing.T, db *postgres.DB, user, tier string) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO user_profiles (user_id, subscription_tier) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET subscription_tier = EXCLUDED.subscription_tier`, user, tier)
	if err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationCRUDScopedAndSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newIntegrationStore(t)
	setTier(t, db, "ann", docflow.TierStarter)
	in := imapRecord("ann")
	if err := s.CreateIntegration(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	if in.ID == 0 || !in.HasCredentials || in.Credentials != nil || in.Status.State != docflow.IntegrationStateIdle || in.Config["port"] != float64(993) {
		t.Fatalf("created %+v", in)
	}
	var sealed string
	if err := db.Pool.QueryRow(ctx, `SELECT credentials FROM integrations WHERE id=$1`, in.ID).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if sealed == "" || strings.Contains(sealed, "hunter2") || strings.Contains(sealed, "username") {
		t.Fatalf("credentials are not sealed: %q", sealed)
	}
	full, err := s.IntegrationWithCredentials(ctx, "ann", in.ID)
	if err != nil || full.Credentials["password"] != "hunter2-secret" {
		t.Fatalf("%+v %v", full, err)
	}
	// Another owner sees nothing of it.
	if _, err := s.GetIntegration(ctx, "bob", in.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("bob get: %v", err)
	}
	if _, err := s.IntegrationWithCredentials(ctx, "bob", in.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("bob creds: %v", err)
	}
	if err := s.DeleteIntegration(ctx, "bob", in.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("bob delete: %v", err)
	}
	if _, err := s.UpdateIntegration(ctx, "bob", in.ID, true, func(*docflow.Integration) error { return nil }); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("bob update: %v", err)
	}
	// Update without credentials keeps them; with them replaces them.
	up, err := s.UpdateIntegration(ctx, "ann", in.ID, false, func(x *docflow.Integration) error {
		x.Name = "renamed"
		return nil
	})
	if err != nil || up.Name != "renamed" || !up.HasCredentials {
		t.Fatalf("%+v %v", up, err)
	}
	if full, _ := s.IntegrationWithCredentials(ctx, "ann", in.ID); full.Credentials["password"] != "hunter2-secret" {
		t.Fatal("credentials lost by an update without them")
	}
	if _, err := s.UpdateIntegration(ctx, "ann", in.ID, false, func(x *docflow.Integration) error {
		x.Credentials = map[string]string{"username": "ann", "password": "new"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if full, _ := s.IntegrationWithCredentials(ctx, "ann", in.ID); full.Credentials["password"] != "new" {
		t.Fatal("credentials not replaced")
	}
	// Moving the endpoint keeps no stored credentials: without new ones
	// the update is refused, whoever calls.
	if _, err := s.UpdateIntegration(ctx, "ann", in.ID, false, func(x *docflow.Integration) error {
		x.Config["host"] = "imap.attacker.example"
		return nil
	}); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("host moved without credentials: %v", err)
	}
	if got, _ := s.GetIntegration(ctx, "ann", in.ID); got.Config["host"] == "imap.attacker.example" {
		t.Fatal("the refused move was stored")
	}
	// Filters.
	if err := s.CreateIntegration(ctx, localRecord("ann", true), false); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[docflow.IntegrationFilter]int{
		{}: 2, {Direction: docflow.DirectionSource}: 1, {IntegrationType: "LOCAL"}: 1, {IntegrationType: "S3"}: 0,
	} {
		list, err := s.ListIntegrations(ctx, "ann", f)
		if err != nil || len(list) != want {
			t.Errorf("%+v: %d %v", f, len(list), err)
		}
	}
	if list, _ := s.ListIntegrations(ctx, "bob", docflow.IntegrationFilter{}); len(list) != 0 {
		t.Fatal("bob lists ann's")
	}
	if err := s.DeleteIntegration(ctx, "ann", in.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetIntegration(ctx, "ann", in.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatal(err)
	}
}

func TestIntegrationQuotaInTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newIntegrationStore(t)
	// No profile: free, 1 destination, no source.
	if err := s.CreateIntegration(ctx, imapRecord("ann"), false); docflow.ErrorCode(err) != docflow.EFORBIDDEN {
		t.Fatalf("free source: %v", err)
	}
	if err := s.CreateIntegration(ctx, localRecord("ann", true), false); err != nil {
		t.Fatal(err)
	}
	err := s.CreateIntegration(ctx, localRecord("ann", true), false)
	if docflow.ErrorCode(err) != docflow.EFORBIDDEN || docflow.ErrorMessage(err) != "plan limit reached, remove a destination or upgrade" {
		t.Fatalf("second destination: %v", err)
	}
	// Inactive ones do not count, but re-activating one does.
	idle := localRecord("ann", false)
	if err := s.CreateIntegration(ctx, idle, false); err != nil {
		t.Fatal(err)
	}
	activate := func(x *docflow.Integration) error { x.IsActive = true; return nil }
	if _, err := s.UpdateIntegration(ctx, "ann", idle.ID, false, activate); docflow.ErrorCode(err) != docflow.EFORBIDDEN {
		t.Fatalf("re-activate: %v", err)
	}
	// Exempt owners (admins, single user) have no quota.
	if _, err := s.UpdateIntegration(ctx, "ann", idle.ID, true, activate); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateIntegration(ctx, imapRecord("ann"), true); err != nil {
		t.Fatal(err)
	}
	u, err := s.IntegrationUsage(ctx, "ann")
	if err != nil || u.Tier != "free" || u.Destinations != 2 || u.Sources != 1 {
		t.Fatalf("%+v %v", u, err)
	}

	// Concurrent creates never exceed the tier's limit.
	setTier(t, db, "cat", docflow.TierProfessional)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.CreateIntegration(ctx, localRecord("cat", true), false)
			mu.Lock()
			defer mu.Unlock()
			switch docflow.ErrorCode(err) {
			case "":
				ok++
			case docflow.EFORBIDDEN:
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok != 5 || refused != 7 {
		t.Fatalf("professional: %d created, %d refused", ok, refused)
	}
	setTier(t, db, "pow", docflow.TierPower)
	for i := 0; i < 5; i++ {
		if err := s.CreateIntegration(ctx, imapRecord("pow"), false); err != nil {
			t.Fatalf("power source %d: %v", i, err)
		}
	}
}

func TestIntegrationStatusReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newIntegrationStore(t)
	in := imapRecord("ann")
	if err := s.CreateIntegration(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	state, boom := "connected", "login failed: bad password"
	poll := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 2; i++ {
		err := s.RecordIntegrationStatus(ctx, in.ID, docflow.IntegrationStatusUpdate{State: &state, LastPollAt: &poll,
			MessagesSeen: 3, DocumentsIngested: 2, UsedAt: &poll})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetIntegrationError(ctx, in.ID, boom); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetIntegration(ctx, "ann", in.ID)
	st := got.Status
	if st.State != "connected" || st.MessagesSeen != 6 || st.DocumentsIngested != 4 || st.LastPollAt == nil || !st.LastPollAt.Equal(poll) ||
		got.LastError == nil || *got.LastError != boom || got.LastUsedAt == nil || !got.LastUsedAt.Equal(poll) {
		t.Fatalf("%+v %+v", got, st)
	}
	if !got.UpdatedAt.Equal(in.UpdatedAt) {
		t.Error("a status report changed updated_at")
	}
	if err := s.SetIntegrationError(ctx, in.ID, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetIntegration(ctx, "ann", in.ID); got.LastError != nil || got.Status.MessagesSeen != 6 {
		t.Fatalf("%+v", got)
	}
	// The status the IMAP runner writes (state->'status', beside its cursor) is
	// what the API reads.
	if _, err := db.Pool.Exec(ctx, `UPDATE integrations SET state = state || jsonb_build_object('status',
		'{"state": "backing_off", "messages_seen": 9}'::jsonb, 'imap', '{"uid": 4}'::jsonb) WHERE id = $1`, in.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetIntegration(ctx, "ann", in.ID); got.Status.State != "backing_off" || got.Status.MessagesSeen != 9 {
		t.Fatalf("%+v", got.Status)
	}
	_ = s.DeleteIntegration(ctx, "ann", in.ID)
	if err := s.SetIntegrationError(ctx, in.ID, "x"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("gone: %v", err)
	}
}
