package app

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/analytics/prom"
	"docflow/internal/passwd"
	"docflow/storage/postgres"
	"docflow/streams"
)

// startAccounts builds the local account store and the admin check the
// HTTP server asks on every request of a session or token. Passwords are
// hashed and verified PASSWORD_HASH_CONCURRENCY at a time (0: one per
// core), PASSWORD_HASH_QUEUE more waiting; beyond that a sign-in, a reset
// or an account change is refused with 429. /metrics counts them.
func (m *App) startAccounts() {
	hasher := passwd.Limit(passwd.Hasher{}, docflow.SettingInt(m.Settings, "PASSWORD_HASH_CONCURRENCY", 0),
		docflow.SettingInt(m.Settings, "PASSWORD_HASH_QUEUE", 32))
	m.Prom.MustRegister(
		prom.CounterFunc("password_hashes_total", "Password hashes and verifications run (argon2id, about 40 ms of CPU each).",
			func() float64 { return float64(hasher.Stats().Runs) }),
		prom.CounterFunc("password_hashes_refused_total", "Password hashes and verifications refused because too many were running and waiting (answered 429).",
			func() float64 { return float64(hasher.Stats().Refused) }),
		prom.GaugeFunc("password_hashes_waiting", "Password hashes and verifications waiting for a turn.",
			func() float64 { return float64(hasher.Stats().Waiting) }))
	m.Accounts = postgres.NewAccountService(m.DB, streams.EncodeEvent, hasher, m.cfg.Now)
	m.admins = &adminCache{settings: m.Settings, accounts: m.Accounts, ttl: adminCacheTTL, log: m.Log, m: map[string]adminEntry{}}
}

// localLogin is http.Config.LocalLogin: a local account by user name or
// e-mail; its user id is its e-mail.
func (m *App) localLogin(ctx context.Context, login, password string) (*docflow.User, error) {
	u, err := m.Accounts.Authenticate(ctx, login, password)
	if err != nil {
		return nil, err
	}
	m.admins.forget(u.Email)
	name := u.DisplayName
	if name == "" {
		name = u.Username
	}
	return &docflow.User{ID: u.Email, DisplayName: name, Email: u.Email, IsAdmin: u.IsAdmin}, nil
}

// loginOwner is http.Config.LoginOwner: the user id (e-mail) of the local
// account whose user name or e-mail is login.
func (m *App) loginOwner(ctx context.Context, login string) (string, error) {
	u, err := m.Accounts.FindLocalUserByLogin(ctx, login)
	if err != nil {
		return "", err
	}
	return u.Email, nil
}

// adminCacheTTL is how long an answer of the admin check is reused: a
// token request asks it every time, and an admin's rights removed (or an
// account deactivated) apply to its tokens within this time. Sessions of
// an account that loses its rights are ended by the store at once.
const adminCacheTTL = 5 * time.Second

const adminCacheMax = 10_000

type adminEntry struct {
	admin bool
	at    time.Time
}

// adminCache answers http.Config.IsAdmin: the ADMIN_USERNAME account, or
// an active local account with is_admin (IsLocalAdmin). An SSO admin check
// is ORed in beside it where SSO is wired.
type adminCache struct {
	settings docflow.SettingsService
	accounts *postgres.AccountService
	ttl      time.Duration
	log      zerolog.Logger
	mu       sync.Mutex
	m        map[string]adminEntry
}

// isAdmin is http.Config.IsAdmin.
func (a *adminCache) isAdmin(ctx context.Context, userID string) bool {
	if userID == "" {
		return false
	}
	if userID == docflow.AdminUserID(a.settings) {
		return true
	}
	now := time.Now()
	a.mu.Lock()
	e, ok := a.m[userID]
	a.mu.Unlock()
	if ok && now.Sub(e.at) < a.ttl {
		return e.admin
	}
	admin, err := a.accounts.IsLocalAdmin(ctx, userID)
	if err != nil {
		// Not cached: the next request asks again.
		a.log.Warn().Err(err).Msg("admin check")
		return false
	}
	a.mu.Lock()
	if len(a.m) >= adminCacheMax {
		clear(a.m)
	}
	a.m[userID] = adminEntry{admin: admin, at: now}
	a.mu.Unlock()
	return admin
}

// forget drops userID's answer (after a sign-in, which read it afresh).
func (a *adminCache) forget(userID string) {
	a.mu.Lock()
	delete(a.m, userID)
	a.mu.Unlock()
}

// forgetAll drops every answer (an account's rights changed).
func (a *adminCache) forgetAll() {
	a.mu.Lock()
	clear(a.m)
	a.mu.Unlock()
}

// accountStore is the account store the HTTP API is handed: a change to
// an account drops the cached admin answers, so a grant or a removal of
// rights applies to the next request.
type accountStore struct {
	*postgres.AccountService
	admins *adminCache
}

func (s accountStore) UpdateLocalUser(ctx context.Context, id int64, p docflow.LocalUserPatch) (*docflow.LocalUser, error) {
	defer s.admins.forgetAll()
	return s.AccountService.UpdateLocalUser(ctx, id, p)
}

func (s accountStore) DeleteLocalUser(ctx context.Context, id int64) error {
	defer s.admins.forgetAll()
	return s.AccountService.DeleteLocalUser(ctx, id)
}

// anyAdmin is an admin check that says yes when any of checks does.
func anyAdmin(checks ...func(context.Context, string) bool) func(context.Context, string) bool {
	return func(ctx context.Context, userID string) bool {
		for _, c := range checks {
			if c(ctx, userID) {
				return true
			}
		}
		return false
	}
}
