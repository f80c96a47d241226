package postgres_test

import (
	"context"
	"slices"
	"testing"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

func openProfiles(t *testing.T) (*postgres.DB, *postgres.ProfileStore) {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "profiles")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return db, postgres.NewProfileStore(db, streams.EncodeEvent)
}

// seedOwned records n files of owner (size bytes each) with status.
func seedOwned(t *testing.T, db *postgres.DB, owner, status string, n int, size int64) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, owner_id, original_blob)
		SELECT md5($1 || $2 || i), 'f' || i || '.pdf', md5($1 || i) || '.pdf', $4, 'application/pdf', $2, $1, ''
		FROM generate_series(1, $3) AS i`, owner, status, n, size)
	if err != nil {
		t.Fatal(err)
	}
}

// userEvents returns the user events in the outbox, oldest first.
func userEvents(t *testing.T, db *postgres.DB) []streams.Event {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT payload FROM outbox WHERE topic=$1 ORDER BY id`, streams.TopicEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []streams.Event
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			t.Fatal(err)
		}
		_, ev, err := streams.Decode[streams.Event](b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func TestProfilesListIncludesOwnersAndCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := openProfiles(t)
	if _, err := p.EnsureProfile(ctx, "Ann@Example.com", "Ann Smith", "local"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.EnsureProfile(ctx, "bob", "Bobby", "local"); err != nil {
		t.Fatal(err)
	}
	seedOwned(t, db, "Ann@Example.com", "completed", 3, 100)
	seedOwned(t, db, "carol", "failed", 2, 10) // owner without a profile
	users, total, err := p.ListProfiles(ctx, docflow.ProfileFilter{})
	if err != nil || total != 3 || len(users) != 3 {
		t.Fatalf("list: %d %d %v", total, len(users), err)
	}
	got := map[string]docflow.UserProfile{}
	for _, u := range users {
		got[u.UserID] = u
	}
	if a := got["Ann@Example.com"]; a.DocumentCount != 3 || a.LastUpload == nil || a.ProfileID == 0 {
		t.Fatalf("ann: %+v", a)
	}
	if c := got["carol"]; c.DocumentCount != 2 || c.ProfileID != 0 || c.SubscriptionTier != "free" {
		t.Fatalf("carol: %+v", c)
	}
	if b := got["bob"]; b.DocumentCount != 0 || b.LastUpload != nil {
		t.Fatalf("bob: %+v", b)
	}
	// q matches user id or display name, case-insensitively.
	for q, want := range map[string][]string{"ann@": {"Ann@Example.com"}, "BOBBY": {"bob"}, "car": {"carol"}, "smith": {"Ann@Example.com"}, "zzz": nil} {
		users, total, err := p.ListProfiles(ctx, docflow.ProfileFilter{Query: q})
		var ids []string
		for _, u := range users {
			ids = append(ids, u.UserID)
		}
		if err != nil || total != len(want) || !slices.Equal(ids, want) {
			t.Errorf("q=%q: %v %d %v", q, ids, total, err)
		}
	}
	// Paging by user id.
	users, total, err = p.ListProfiles(ctx, docflow.ProfileFilter{Page: 2, PerPage: 2})
	if err != nil || total != 3 || len(users) != 1 || users[0].UserID != "carol" {
		t.Fatalf("page 2: %+v %d %v", users, total, err)
	}
	users, _, err = p.ListProfiles(ctx, docflow.ProfileFilter{Page: 9, PerPage: 2})
	if err != nil || users == nil || len(users) != 0 {
		t.Fatalf("past the end: %v %v", users, err)
	}
}

func TestProfileDetailStatistics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := openProfiles(t)
	seedOwned(t, db, "dan", "completed", 2, 1000)
	seedOwned(t, db, "dan", "failed", 1, 50)
	seedOwned(t, db, "dan", "duplicate", 1, 1000)
	d, err := p.ProfileDetail(ctx, "dan")
	if err != nil {
		t.Fatal(err)
	}
	if d.HasProfile || d.DocumentCount != 4 || d.Statistics.BytesStored != 2050 ||
		d.Statistics.ByStatus["completed"] != 2 || d.Statistics.ByStatus["failed"] != 1 || d.Statistics.ByStatus["duplicate"] != 1 {
		t.Fatalf("detail: %+v", d)
	}
	var fileID int64
	if err := db.Pool.QueryRow(ctx, `SELECT min(id) FROM files WHERE owner_id='dan'`).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'dan', 'eve', 'viewer')`, fileID); err != nil {
		t.Fatal(err)
	}
	if d, err = p.ProfileDetail(ctx, "dan"); err != nil || d.Statistics.SharesGiven != 1 || d.Statistics.SharesReceived != 0 {
		t.Fatalf("shares: %+v %v", d, err)
	}
	if _, err := p.ProfileDetail(ctx, "nobody"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown: %v", err)
	}
	// eve has a share but neither profile nor documents: not a user here.
	if _, err := p.ProfileDetail(ctx, "eve"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("eve: %v", err)
	}
}

func TestPutProfileEmitsSignupAndPlanChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := openProfiles(t)
	name, limit, tier := "Fay", 5, docflow.TierStarter
	prof, created, err := p.PutProfile(ctx, "fay+x@example.com", docflow.ProfileUpdate{DisplayName: &name, DailyUploadLimit: &limit, SubscriptionTier: &tier})
	if err != nil || !created || *prof.DisplayName != "Fay" || *prof.DailyUploadLimit != 5 || prof.SubscriptionTier != "starter" {
		t.Fatalf("create: %+v %v %v", prof, created, err)
	}
	// Same tier again: no event; explicit null clears the limit; absent
	// fields are kept.
	blocked := true
	prof, created, err = p.PutProfile(ctx, "fay+x@example.com", docflow.ProfileUpdate{SubscriptionTier: &tier, SetDailyUploadLimit: true, IsBlocked: &blocked})
	if err != nil || created || prof.DailyUploadLimit != nil || !prof.IsBlocked || *prof.DisplayName != "Fay" {
		t.Fatalf("update: %+v %v %v", prof, created, err)
	}
	power := docflow.TierPower
	if _, _, err = p.PutProfile(ctx, "fay+x@example.com", docflow.ProfileUpdate{SubscriptionTier: &power}); err != nil {
		t.Fatal(err)
	}
	evs := userEvents(t, db)
	var names []string
	for _, e := range evs {
		names = append(names, e.Name)
	}
	want := []string{docflow.EventUserSignup, docflow.EventUserPlanChanged, docflow.EventUserPlanChanged}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v", names, want)
	}
	if d := evs[0].Data; d["user_id"] != "fay+x@example.com" || d["source"] != "admin" || d["display_name"] != "Fay" {
		t.Fatalf("signup: %v", d)
	}
	if d := evs[1].Data; d["old_tier"] != "free" || d["new_tier"] != "starter" {
		t.Fatalf("plan 1: %v", d)
	}
	if d := evs[2].Data; d["user_id"] != "fay+x@example.com" || d["old_tier"] != "starter" || d["new_tier"] != "power" {
		t.Fatalf("plan 2: %v", d)
	}
}

func TestDeleteProfileAndPaymentIssue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := openProfiles(t)
	if _, err := p.ReportPaymentIssue(ctx, "gus", "card declined"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("no profile: %v", err)
	}
	if _, err := p.EnsureProfile(ctx, "gus", "", "local"); err != nil {
		t.Fatal(err)
	}
	seedOwned(t, db, "gus", "completed", 1, 10)
	prof, err := p.ReportPaymentIssue(ctx, "gus", "card declined")
	if err != nil || prof.UserID != "gus" || prof.DocumentCount != 1 {
		t.Fatalf("payment issue: %+v %v", prof, err)
	}
	evs := userEvents(t, db)
	if last := evs[len(evs)-1]; last.Name != docflow.EventUserPaymentIssue || last.Data["issue"] != "card declined" || last.Data["user_id"] != "gus" {
		t.Fatalf("event: %+v", last)
	}
	if err := p.DeleteProfile(ctx, "gus"); err != nil {
		t.Fatal(err)
	}
	if err := p.DeleteProfile(ctx, "gus"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("second delete: %v", err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE owner_id='gus'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("documents kept: %d %v", n, err)
	}
}

func TestSearchUsersAndMentionable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, p := openProfiles(t)
	for i, u := range []struct{ id, name string }{{"zed@example.com", "Zed"}, {"amy@example.com", "amy"}, {"Hal", ""}, {"blocked@example.com", "Al Blocked"}} {
		if _, err := p.EnsureProfile(ctx, u.id, u.name, "local"); err != nil {
			t.Fatal(i, err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE user_profiles SET is_blocked = TRUE WHERE user_id = 'blocked@example.com'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO local_users (email, username, display_name, password_hash) VALUES ('kim@corp.example', 'kimberly', 'Kim', 'x')`); err != nil {
		t.Fatal(err)
	}
	seedOwned(t, db, "owner-only", "completed", 1, 1)
	for q, want := range map[string][]string{
		"EXAMPLE.COM": {"amy@example.com", "blocked@example.com", "zed@example.com"},
		"kimber":      {"kim@corp.example"},
		"hal":         {"Hal"},
		"owner":       {"owner-only"},
		"%":           nil,
	} {
		got, err := p.SearchUsers(ctx, q, 5)
		if err != nil || !slices.Equal(got, want) && !(len(want) == 0 && len(got) == 0) {
			t.Errorf("search %q: %v %v, want %v", q, got, err, want)
		}
	}
	if got, _ := p.SearchUsers(ctx, "", 2); len(got) != 2 {
		t.Errorf("limit: %v", got)
	}
	m, err := p.Mentionable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range m {
		ids = append(ids, x.UserID)
	}
	// By display name, the user id standing in for a missing one.
	if want := []string{"amy@example.com", "Hal", "zed@example.com"}; !slices.Equal(ids, want) {
		t.Fatalf("mentionable %v, want %v", ids, want)
	}
	if m[1].DisplayName != nil || *m[0].DisplayName != "amy" {
		t.Fatalf("display names: %+v", m)
	}
}
