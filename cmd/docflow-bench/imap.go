package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/netguard"
	"docflow/storage/postgres"
)

// benchIMAP measures IMAP sources against a real Dovecot on loopback: mails
// with one 100 KB PDF each taken in (to pending) beside the same client
// fetching the same mails without taking them in, and the memory of 100
// idle sources held by one worker.
func benchIMAP(ctx context.Context, r *Report, o *options) error {
	const section = "imap"
	mails := 1000
	if o.quick {
		mails = 300
	}
	d, err := imaptest.NewDovecot(map[string]string{"base": "secret", "docflow": "secret", "idle": "secret"})
	if err != nil {
		return fmt.Errorf("imap bench: %w", err)
	}
	defer d.Close()
	for _, user := range []string{"base", "docflow"} {
		batch := make([][]byte, 0, 100)
		for i := 0; i < mails; i++ {
			batch = append(batch, imaptest.Mail(fmt.Sprintf("%s-%d@bench", user, i), "scan",
				imaptest.Attachment{Name: fmt.Sprintf("scan-%d.pdf", i), ContentType: "application/pdf",
					Data: imaptest.PDF(fmt.Sprintf("%s %d", user, i), 100<<10)}))
			if len(batch) == cap(batch) || i == mails-1 {
				if err := imaptest.Append(ctx, d.Addr, user, "secret", "INBOX", batch...); err != nil {
					return fmt.Errorf("imap bench: deliver: %w", err)
				}
				batch = batch[:0]
			}
		}
	}
	host, port, _ := net.SplitHostPort(d.Addr)
	p, _ := strconv.Atoi(port)
	integration := func(user string) *docflow.Integration {
		return &docflow.Integration{OwnerID: "bench", Direction: docflow.DirectionSource, IntegrationType: "IMAP", Name: user,
			Config:      map[string]any{"host": host, "port": p, "security": "none", "poll_interval": 60},
			Credentials: map[string]string{"username": user, "password": "secret"}, IsActive: true}
	}

	// Baseline: the same client and poll, the attachments read and dropped.
	cfg, err := imap.ParseConfig(integration("base"))
	if err != nil {
		return err
	}
	cfg.Dial = netguard.Dialer{AllowPrivate: true}.DialContext // the bench's own server, on loopback
	k, err := imap.New(cfg, nil)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := k.Connect(ctx); err != nil {
		return fmt.Errorf("imap bench: baseline connect: %w", err)
	}
	sink := &discardSink{done: map[string]bool{}}
	cur := docflow.MailCursor{}
	for sink.n.Load() < int64(mails) {
		res, err := k.Poll(ctx, cur, sink, time.Minute, zerolog.Nop())
		if err != nil {
			return fmt.Errorf("imap bench: baseline poll: %w", err)
		}
		cur = res.Cursor
		if res.Seen == 0 {
			break
		}
	}
	baseRate := float64(sink.n.Load()) / time.Since(t0).Seconds()
	k.Close(ctx) //nolint:errcheck

	// docflow: a worker with the source; documents recorded pending.
	dir, err := os.MkdirTemp("", "docflow-bench-imap-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log := zerolog.Nop()
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", Log: &log, Workdir: dir, NoRelay: true, ProductionTimings: true,
		Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	if err != nil {
		return fmt.Errorf("imap bench: %w", err)
	}
	defer a.Close()
	c, _ := postgres.NewCipher(apptestSecret)
	store := postgres.NewSourceStore(a.DB, c)
	in := integration("docflow")
	if err := store.AddSourceFixture(ctx, in); err != nil {
		return err
	}
	// The clock starts when a worker's scan (every 5 s) has leased the
	// source: the figure is the source's rate, not the scan's period.
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if _, _, owner, err := store.SourceRow(ctx, in.ID); err != nil {
			return err
		} else if owner != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("imap bench: the source was not leased")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t0 = time.Now()
	n := 0
	for n < mails {
		if time.Now().After(deadline) {
			return fmt.Errorf("imap bench: %d of %d documents after 10 minutes", n, mails)
		}
		time.Sleep(20 * time.Millisecond)
		if n, _, err = store.CountMailFiles(ctx, in.ID); err != nil {
			return err
		}
	}
	rate := float64(mails) / time.Since(t0).Seconds()
	r.Add(Row{Section: section, Name: fmt.Sprintf("%d mails, one 100 KB PDF each, to pending", mails), Value: rate, Unit: "/s",
		Baseline: baseRate, Target: ">= 200 /s", Pass: rate >= 200})
	infoLine(r, section, "  baseline: the same client fetching without taking in", fmt.Sprintf("%12.0f /s", baseRate))
	a.Close()

	// 100 idle sources in one worker.
	dir2, err := os.MkdirTemp("", "docflow-bench-imap-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir2)
	b, err := apptest.Start(ctx, apptest.Options{Role: "worker", Log: &log, Workdir: dir2, NoRelay: true, ProductionTimings: true,
		Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	if err != nil {
		return fmt.Errorf("imap bench: %w", err)
	}
	defer b.Close()
	store = postgres.NewSourceStore(b.DB, c)
	time.Sleep(2 * time.Second)
	before := settledRSS()
	var ids []int64
	for i := 0; i < 100; i++ {
		in := integration("idle")
		in.Name = fmt.Sprintf("idle-%d", i)
		if err := store.AddSourceFixture(ctx, in); err != nil {
			return err
		}
		ids = append(ids, in.ID)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for connected := 0; connected < len(ids); {
		if time.Now().After(deadline) {
			return fmt.Errorf("imap bench: %d of 100 sources connected after 2 minutes", connected)
		}
		time.Sleep(200 * time.Millisecond)
		connected = 0
		for _, id := range ids {
			if st, _, _, err := store.SourceRow(ctx, id); err == nil && st.State == "connected" && st.LastPollAt != nil {
				connected++
			}
		}
	}
	time.Sleep(2 * time.Second)
	after := settledRSS()
	r.AtMost(section, "100 idle IMAP sources in one worker (RSS added)", float64(after-before)/(1<<20), "MiB", 50)
	return nil
}

// apptestSecret is the SESSION_SECRET apptest gives its processes.
const apptestSecret = "tttttttttttttttttttttttttttttttttttttttt"

// settledRSS is this process's RSS after a collection has returned what
// it can to the system.
func settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	n, _ := searchSelfRSS()
	return n
}

// discardSink reads every attachment and keeps nothing.
type discardSink struct {
	done map[string]bool
	n    atomic.Int64
}

func (s *discardSink) MailSeen(_ context.Context, key string) (bool, []int, error) {
	return s.done[key], nil, nil
}

func (s *discardSink) Ingest(_ context.Context, a *imap.Attachment) error {
	if _, err := io.Copy(io.Discard, a.Body); err != nil {
		return docflow.Errorf(docflow.EBADREQUEST, "read: %v", err)
	}
	s.n.Add(1)
	return nil
}

func (s *discardSink) MailsDone(_ context.Context, keys []string) error {
	for _, k := range keys {
		s.done[k] = true
	}
	return nil
}
