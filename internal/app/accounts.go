package app

import (
	"context"

	"docflow"
	"docflow/analytics/prom"
	"docflow/internal/passwd"
	"docflow/internal/ttlcache"
	"docflow/storage/postgres"
	"docflow/streams"
)

// startUserStates builds the one check of what a user id may do now
// (userstate.go), which the HTTP server asks for every token and session
// and the delivery's fan-out for every hook that sees all: every role
// builds it.
func (m *App) startUserStates() {
	m.startSSO()
	m.userStore = postgres.NewUserStateStore(m.DB)
	m.users = &userStates{settings: m.Settings, local: m.userStore.LocalUserState, sso: m.ssoUserState,
		cache: ttlcache.New[string, localState](userStateMax, userStateTTL, nil)}
}

// startAccounts builds the local account store (serve and api).
// Passwords are hashed and verified PASSWORD_HASH_CONCURRENCY at a time
// (0: one per core), PASSWORD_HASH_QUEUE more waiting; beyond that a
// sign-in, a reset or an account change is refused with 429. /metrics
// counts them.
func (m *App) startAccounts() {
	hasher := passwd.Limit(passwd.Hasher{}, docflow.PasswordHashConcurrency.Get(m.Settings),
		docflow.PasswordHashQueue.Get(m.Settings))
	m.Prom.MustRegister(
		prom.CounterFunc("password_hashes_total", "Password hashes and verifications run (argon2id, about 40 ms of CPU each).",
			func() float64 { return float64(hasher.Stats().Runs) }),
		prom.CounterFunc("password_hashes_refused_total", "Password hashes and verifications refused because too many were running and waiting (answered 429).",
			func() float64 { return float64(hasher.Stats().Refused) }),
		prom.GaugeFunc("password_hashes_waiting", "Password hashes and verifications waiting for a turn.",
			func() float64 { return float64(hasher.Stats().Waiting) }))
	m.Accounts = postgres.NewAccountStore(m.DB, streams.EncodeEvent, hasher, m.cfg.Now)
}

// localLogin is http.Config.LocalLogin: a local account by user name or
// e-mail; its user id is its e-mail.
func (m *App) localLogin(ctx context.Context, login, password string) (*docflow.User, error) {
	u, err := m.Accounts.Authenticate(ctx, login, password)
	if err != nil {
		return nil, err
	}
	m.users.forget(u.Email)
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

// accountStore is the account store the HTTP API is handed: a change to
// an account drops the cached user states, so a grant, a removal of
// rights or a deactivation applies to the next request.
type accountStore struct {
	*postgres.AccountStore
	users *userStates
}

func (s accountStore) CreateLocalUser(ctx context.Context, in docflow.LocalUserInput) (*docflow.LocalUser, error) {
	defer s.users.forgetAll()
	return s.AccountStore.CreateLocalUser(ctx, in)
}

func (s accountStore) UpdateLocalUser(ctx context.Context, id int64, p docflow.LocalUserPatch) (*docflow.LocalUser, error) {
	defer s.users.forgetAll()
	return s.AccountStore.UpdateLocalUser(ctx, id, p)
}

func (s accountStore) DeleteLocalUser(ctx context.Context, id int64) error {
	defer s.users.forgetAll()
	return s.AccountStore.DeleteLocalUser(ctx, id)
}
