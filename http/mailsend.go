package http

import (
	"context"
	"strings"
	"sync"
	"time"

	"docflow"
	"docflow/internal/ttlcache"
)

// The self-service endpoints (request-password-reset, forgot-username)
// answer at once, the same for known and unknown addresses: the lookup,
// the token and the mail happen here, on one background goroutine fed by
// a bounded queue, so neither the answer nor its time says whether an
// address has an account. Shutdown stops it.

// mailJob is one self-service request waiting for the sender.
type mailJob struct {
	kind     string // docflow.AuditPasswordResetRequested or docflow.AuditUsernameRequested
	email    string
	clientIP string
}

const (
	mailQueueSize = 256
	// mailPerAccount is the least time between two self-service mails to
	// one account, so nobody can flood someone's inbox through the form.
	mailPerAccount = time.Minute
	// mailRecentMax bounds the accounts remembered; beyond it the one
	// mailed least recently is forgotten first.
	mailRecentMax = 10_000
)

type mailSender struct {
	s      *Server
	d      LocalUsersDeps
	jobs   chan mailJob
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// closing guards jobs: a request still running after Shutdown gave
	// up waiting must not send on the closed channel.
	closing sync.RWMutex
	closed  bool
	// mu makes allow's look and record one step.
	mu sync.Mutex
	// recent holds the accounts (e-mail) mailed less than mailPerAccount
	// ago.
	recent *ttlcache.Cache[string, struct{}]
}

func newMailSender(s *Server, d LocalUsersDeps) *mailSender {
	m := &mailSender{s: s, d: d, jobs: make(chan mailJob, mailQueueSize),
		recent: ttlcache.New[string, struct{}](mailRecentMax, mailPerAccount, s.cfg.Now)}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.run()
	return m
}

// enqueue hands j to the sender; a full queue drops it (logged): the
// answer is the same either way.
func (m *mailSender) enqueue(j mailJob) {
	m.closing.RLock()
	defer m.closing.RUnlock()
	if m.closed {
		return
	}
	select {
	case m.jobs <- j:
	default:
		m.s.log.Warn().Str("kind", j.kind).Msg("self-service mail queue full; request dropped")
	}
}

// stop ends the sender: queued jobs are worked off until ctx ends, then
// the one in progress is cancelled.
func (m *mailSender) stop(ctx context.Context) {
	m.closing.Lock()
	if !m.closed {
		m.closed = true
		close(m.jobs)
	}
	m.closing.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.cancel()
		<-done
	}
	m.cancel()
}

func (m *mailSender) run() {
	defer m.wg.Done()
	for j := range m.jobs {
		if m.ctx.Err() != nil {
			continue
		}
		m.work(j)
	}
}

func (m *mailSender) work(j mailJob) {
	ctx, cancel := context.WithTimeout(m.ctx, 90*time.Second)
	defer cancel()
	entry := docflow.AuditEntry{Actor: j.email, Action: j.kind, ClientIP: j.clientIP}
	defer func() {
		if m.s.cfg.Audit != nil {
			if err := m.s.cfg.Audit.RecordAudit(ctx, entry); err != nil {
				m.s.log.Error().Err(err).Str("action", entry.Action).Msg("audit entry not recorded")
			}
		}
	}()
	u, err := m.d.Accounts.FindLocalUserByLogin(ctx, j.email)
	// NOTE: the login lookup also matches user names; only the account
	// whose e-mail this is gets mail.
	if err != nil || !strings.EqualFold(u.Email, j.email) {
		if err != nil && docflow.ErrorCode(err) != docflow.ENOTFOUND {
			m.s.log.Error().Err(err).Msg("self-service lookup")
		}
		entry.Detail = "no account"
		return
	}
	entry.Target = localTarget(u.ID)
	if !u.IsActive {
		entry.Detail = "account inactive; nothing sent"
		return
	}
	if !m.allow(u.Email) {
		entry.Detail = "mailed less than a minute ago; nothing sent"
		return
	}
	if m.d.Mailer == nil {
		entry.Detail = "e-mail not configured; nothing sent"
		return
	}
	var mail docflow.Mail
	if j.kind == docflow.AuditUsernameRequested {
		mail = docflow.Mail{To: []string{u.Email}, Subject: "Your docflow user name", Text: usernameMail(m.s.BaseURL(), u)}
	} else {
		token, _, err := m.d.Accounts.CreateResetToken(ctx, u.ID)
		if err != nil {
			m.s.log.Error().Err(err).Int64("local_user_id", u.ID).Msg("create reset token")
			entry.Detail = "no token: " + docflow.ErrorMessage(err)
			return
		}
		mail = resetMail(m.s.BaseURL(), u, token)
	}
	if err := m.d.Mailer.Send(ctx, mail); err != nil {
		m.s.log.Warn().Err(err).Int64("local_user_id", u.ID).Str("kind", j.kind).Msg("self-service mail not sent")
		entry.Detail = "not sent: " + docflow.ErrorMessage(err)
		return
	}
	entry.Detail = "sent"
}

// allow reports whether the account may get a self-service mail now, and
// if so records it.
func (m *mailSender) allow(email string) bool {
	k := strings.ToLower(email)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.recent.Get(k); ok {
		return false
	}
	m.recent.Add(k, struct{}{})
	return true
}
