package app

import (
	"context"

	"docflow"
	"docflow/internal/passwd"
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
		ttl: userStateTTL, cache: map[string]localState{}}
}

// startAccounts builds the local account store (serve and api).
func (m *App) startAccounts() {
	m.Accounts = postgres.NewAccountService(m.DB, streams.EncodeEvent, passwd.Hasher{}, m.cfg.Now)
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

// accountStore is the account store the HTTP API is handed: a change to
// an account drops the cached user states, so a grant, a removal of
// rights or a deactivation applies to the next request.
type accountStore struct {
	*postgres.AccountService
	users *userStates
}

func (s accountStore) CreateLocalUser(ctx context.Context, in docflow.LocalUserInput) (*docflow.LocalUser, error) {
	defer s.users.forgetAll()
	return s.AccountService.CreateLocalUser(ctx, in)
}

func (s accountStore) UpdateLocalUser(ctx context.Context, id int64, p docflow.LocalUserPatch) (*docflow.LocalUser, error) {
	defer s.users.forgetAll()
	return s.AccountService.UpdateLocalUser(ctx, id, p)
}

func (s accountStore) DeleteLocalUser(ctx context.Context, id int64) error {
	defer s.users.forgetAll()
	return s.AccountService.DeleteLocalUser(ctx, id)
}
