package sources_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/sources"
	"docflow/analytics"
	pganalytics "docflow/analytics/postgres"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/netguard"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

const secret = "tttttttttttttttttttttttttttttttttttttttt" // apptest's SESSION_SECRET

func sourceStore(t testing.TB, db *postgres.DB) *postgres.SourceStore {
	c, err := postgres.NewCipher(secret)
	if err != nil {
		t.Fatal(err)
	}
	return postgres.NewSourceStore(db, c)
}

func imapIntegration(addr string, extra map[string]any) *docflow.Integration {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	cfg := map[string]any{"host": host, "port": p, "security": "none", "poll_interval": 10}
	for k, v := range extra {
		cfg[k] = v
	}
	return &docflow.Integration{OwnerID: "user-1", Direction: docflow.DirectionSource, IntegrationType: "IMAP",
		Name: "inbox", Config: cfg, IsActive: true, Credentials: map[string]string{"username": "alice", "password": "secret"}}
}

// TestSourcesIngestLeaseAndFollowTheTable runs a worker (outbox unpublished:
// the pipeline is not under test) with a source on
// the in-memory server (no IDLE: it polls), then a second supervisor that
// must not take the leased source, then deactivation and deletion.
func TestSourcesIngestLeaseAndFollowTheTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	logs := &testsupport.LogBuffer{}
	log := zerolog.New(logs).Level(zerolog.InfoLevel)
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", NoRelay: true, Log: &log, Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	store := sourceStore(t, a.DB)
	in := imapIntegration(addr, nil)
	if err := store.AddSourceFixture(ctx, in); err != nil {
		t.Fatal(err)
	}
	var mails [][]byte
	for i := 0; i < 10; i++ {
		mails = append(mails, imaptest.Mail(fmt.Sprintf("m%d@x", i), fmt.Sprintf("Invoice %d", i),
			imaptest.Attachment{Name: fmt.Sprintf("inv%d.pdf", i), ContentType: "application/pdf", Data: imaptest.PDF(fmt.Sprint(i), 1000)}))
	}
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", mails...); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "10 documents", func() bool {
		n, _, _ := store.CountMailFiles(ctx, in.ID)
		return n == 10
	})
	files, _, err := a.Files.FindFiles(ctx, docflow.FileFilter{Search: "inv3"})
	if err != nil {
		t.Fatal(err)
	}
	var f *docflow.File
	for _, x := range files {
		if x.OriginalFilename == "inv3.pdf" {
			f = x
		}
	}
	if f == nil || f.Source != docflow.ChannelEmail || f.OwnerID == nil || *f.OwnerID != "user-1" {
		t.Fatalf("file = %+v", f)
	}
	em, _ := f.AIMetadata["email"].(map[string]any)
	if em["subject"] != "Invoice 3" || em["message_id"] != "m3@x" || !strings.Contains(fmt.Sprint(em["from"]), "alice@example.com") || em["date"] == nil {
		t.Fatalf("email metadata = %v", em)
	}
	// One intake metric per document, channel email. A document's metric
	// is recorded once its intake returned, just after the file row that
	// the wait above counted: flush until the tenth is in.
	q, err := pganalytics.NewQueries(a.DB.Pool)
	if err != nil {
		t.Fatal(err)
	}
	var stats []docflow.IntakeTypeTotal
	testsupport.WaitFor(t, time.Minute, "10 intake metrics", func() bool {
		if err := a.Recorder.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		now := time.Now().Truncate(time.Minute)
		rep, err := q.Intake(ctx, docflow.AnalyticsQuery{From: now.Add(-time.Hour), To: now.Add(time.Hour), Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		stats = rep.Totals.Channels
		return len(stats) > 1 || len(stats) == 1 && stats[0].Count >= 10
	})
	if len(stats) != 1 || stats[0].Channel != docflow.ChannelEmail || stats[0].Count != 10 {
		t.Fatalf("intake stats = %+v", stats)
	}
	testsupport.WaitFor(t, time.Minute, "status", func() bool {
		st, _, _, _ := store.SourceRow(ctx, in.ID)
		return st.DocumentsIngested == 10 && st.MessagesSeen == 10 && st.LastPollAt != nil && st.State == "connected"
	})

	// A second process's supervisor leaves the leased source alone.
	e, err := actors.NewEngine(zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	other, err := sources.Spawn(e, sources.Config{Store: store, Intake: a.Intake, Owner: "other", Scan: 100 * time.Millisecond, LeaseTTL: 3 * time.Second,
		Dial: netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if _, _, owner, _ := store.SourceRow(ctx, in.ID); owner == nil || *owner == "other" {
		t.Fatalf("lease owner = %v", owner)
	}

	// Deactivated: stopped; active again with a wrong password: the
	// server's reason is the last error.
	in.IsActive = false
	if err := store.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	// The worker's supervisor stops the source at its next scan (at once:
	// the change wakes it), however long that takes on a loaded machine.
	stopped := fmt.Sprintf(`"integration":%d,"message":"sources: source stopped"`, in.ID)
	testsupport.WaitFor(t, time.Minute, "the deactivated source stopped", func() bool { return strings.Contains(logs.String(), stopped) })
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", imaptest.Mail("late@x", "late",
		imaptest.Attachment{Name: "late.pdf", Data: imaptest.PDF("late", 100)})); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // a scan that took it would have come by now
	if n, _, _ := store.CountMailFiles(ctx, in.ID); n != 10 {
		t.Fatalf("a deactivated source took mail: %d", n)
	}
	in.IsActive = true
	in.Config["poll_interval"] = 11
	if err := store.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "the late mail", func() bool {
		n, _, _ := store.CountMailFiles(ctx, in.ID)
		return n == 11
	})
	<-e.Poison(other).Done()

	bad := imapIntegration(addr, nil)
	bad.Credentials["password"] = "wrong"
	if err := store.AddSourceFixture(ctx, bad); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "the login error", func() bool {
		st, le, _, _ := store.SourceRow(ctx, bad.ID)
		return le != nil && strings.Contains(*le, "login refused") && st.State == string(actors.IntegrationBackingOff)
	})
	// Deleted while running: the source stops, nothing breaks.
	if err := store.UpdateSourceFixture(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
}

// TestSourcesRecordIntegrationMetrics checks that each mailbox poll is one
// integration metric: type imap, direction in, the integration's id, the
// attachment bytes taken in, the outcome and the duration.
func TestSourcesRecordIntegrationMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	rec := &analytics.Memory{}
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", NoRelay: true,
		Env:     map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"},
		Sources: func(c *sources.Config) { c.Recorder = rec }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	store := sourceStore(t, a.DB)
	in := imapIntegration(addr, nil)
	if err := store.AddSourceFixture(ctx, in); err != nil {
		t.Fatal(err)
	}
	pdf := imaptest.PDF("metrics", 2000)
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX",
		imaptest.Mail("a@x", "A", imaptest.Attachment{Name: "a.pdf", ContentType: "application/pdf", Data: pdf})); err != nil {
		t.Fatal(err)
	}
	target := strconv.FormatInt(in.ID, 10)
	testsupport.WaitFor(t, time.Minute, "a poll that took the attachment in", func() bool {
		for _, m := range rec.Metrics(docflow.MetricIntegration) {
			if m.Target == target && m.Bytes == int64(len(pdf)) {
				return true
			}
		}
		return false
	})
	for _, m := range rec.Metrics(docflow.MetricIntegration) {
		if m.Type != docflow.MetricTypeIMAP || m.Direction != docflow.DirectionIn || m.Target != target ||
			m.Status != docflow.OutcomeOK || m.ErrorClass != "" || m.Duration <= 0 || m.Time.IsZero() {
			t.Errorf("poll metric %+v", m)
		}
	}
}

// panickyStore is the sources' store whose first lease claim and first
// status write panic.
type panickyStore struct {
	sources.Store
	claims, saves atomic.Int32
}

func (p *panickyStore) ClaimSources(ctx context.Context, owner string, ttl time.Duration) ([]docflow.SourceClaim, error) {
	if p.claims.Add(1) == 1 {
		panic("claim exploded")
	}
	return p.Store.ClaimSources(ctx, owner, ttl)
}

func (p *panickyStore) SaveSourceReport(ctx context.Context, integrationID int64, owner string, r docflow.SourceReport) error {
	if p.saves.Add(1) == 1 {
		panic("save exploded")
	}
	return p.Store.SaveSourceReport(ctx, integrationID, owner, r)
}

// TestSourcesRecoverFromPanickingStore checks that a lease claim and a
// status write that panic are reported to their actors: the supervisor
// claims again and the source writes its status again.
func TestSourcesRecoverFromPanickingStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	ps := &panickyStore{}
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", NoRelay: true,
		Env:     map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"},
		Sources: func(c *sources.Config) { ps.Store, c.Store = c.Store, ps }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	store := sourceStore(t, a.DB)
	in := imapIntegration(addr, nil)
	if err := store.AddSourceFixture(ctx, in); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "the source's status after a poll", func() bool {
		st, _, owner, _ := store.SourceRow(ctx, in.ID)
		return owner != nil && st.LastPollAt != nil && st.State == "connected"
	})
	if n, m := ps.claims.Load(), ps.saves.Load(); n < 2 || m < 2 {
		t.Fatalf("%d claims and %d status writes, want a panicked one and more of each", n, m)
	}
}
