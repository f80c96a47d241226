package app

import (
	"context"
	"sync"
	"time"

	"docflow"
)

// userStateTTL is how long an answer of the user-state check is reused.
// Every request of a token or a session asks it, and the delivery's
// fan-out for each hook that sees all; a change made through this
// process's API drops the answers at once (forgetAll), a change made
// elsewhere (another api process, an SSO sign-in) applies within it.
const userStateTTL = 5 * time.Second

const userStateMax = 10_000

type userStateEntry struct {
	st docflow.UserState
	at time.Time
}

// userStates is the one check of what a user id may do now
// (docflow.UserState): the local admin account (ADMIN_USERNAME) may sign
// in and is an administrator; a local account (by e-mail) may while it is
// active, and is an administrator while it also has is_admin; an SSO user
// as ssoUserState says. An inactive local account may not sign in, even
// if an SSO user has the same id. Everything else may not.
type userStates struct {
	settings docflow.SettingsService
	// local reports the local account with e-mail userID.
	local func(ctx context.Context, userID string) (found, active, admin bool, err error)
	// sso reports the SSO user userID (App.ssoUserState).
	sso func(ctx context.Context, userID string) (known, active, admin bool, err error)
	ttl time.Duration

	mu    sync.Mutex
	cache map[string]userStateEntry
}

// state is http.Config.UserState. A failed lookup is an error, not
// cached: the request fails (500) rather than passing or signing out.
func (u *userStates) state(ctx context.Context, userID string) (docflow.UserState, error) {
	if userID == "" {
		return docflow.UserState{}, nil
	}
	if userID == docflow.AdminUserID(u.settings) {
		return docflow.UserState{SignIn: true, Admin: true}, nil
	}
	now := time.Now()
	u.mu.Lock()
	e, ok := u.cache[userID]
	u.mu.Unlock()
	if ok && now.Sub(e.at) < u.ttl {
		return e.st, nil
	}
	st, err := u.lookup(ctx, userID)
	if err != nil {
		return docflow.UserState{}, err
	}
	u.mu.Lock()
	if len(u.cache) >= userStateMax {
		clear(u.cache)
	}
	u.cache[userID] = userStateEntry{st: st, at: now}
	u.mu.Unlock()
	return st, nil
}

func (u *userStates) lookup(ctx context.Context, userID string) (docflow.UserState, error) {
	found, lActive, lAdmin, err := u.local(ctx, userID)
	if err != nil {
		return docflow.UserState{}, err
	}
	if found && !lActive {
		return docflow.UserState{}, nil
	}
	known, sActive, sAdmin, err := u.sso(ctx, userID)
	if err != nil {
		return docflow.UserState{}, err
	}
	return docflow.UserState{
		SignIn: found || (known && sActive),
		Admin:  (found && lAdmin) || (known && sActive && sAdmin),
	}, nil
}

// isAdmin is postgres.WebhookStore.HookOwnerAdmin: whether userID is an
// administrator now.
func (u *userStates) isAdmin(ctx context.Context, userID string) (bool, error) {
	st, err := u.state(ctx, userID)
	return st.Admin, err
}

// forget drops userID's answer (after a sign-in, which read it afresh).
func (u *userStates) forget(userID string) {
	u.mu.Lock()
	delete(u.cache, userID)
	u.mu.Unlock()
}

// forgetAll drops every answer (an account changed).
func (u *userStates) forgetAll() {
	u.mu.Lock()
	clear(u.cache)
	u.mu.Unlock()
}
