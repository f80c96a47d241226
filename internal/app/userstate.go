package app

import (
	"context"
	"time"

	"docflow"
	"docflow/internal/ttlcache"
)

// userStateTTL is how long what the local accounts say of a user id is
// reused. Every request of a token or a session asks, and the delivery's
// fan-out for each hook that sees all; a change made through this
// process's API drops the answers at once (forgetAll), a change made
// through another process applies within it. The SSO side is asked every
// time: ssoUserState keeps its own state (when the provider vouched for
// the user last) in its store.
const userStateTTL = 5 * time.Second

// userStateMax bounds the user ids whose answer is kept; beyond it the
// least recently asked is read again when next asked.
const userStateMax = 10_000

// localState is what local_users says of a user id.
type localState struct {
	found, active, admin bool
}

// userStates is the one check of what a user id may do now
// (docflow.UserState): the local admin account (ADMIN_USERNAME) may sign
// in and is an administrator; a local account (by e-mail) may while it is
// active, and is an administrator while it also has is_admin (an SSO
// identity linked to it signs in as the account, with its rights); any
// other id is an SSO user or nobody, as ssoUserState says.
type userStates struct {
	settings docflow.SettingsStore
	// local reports the local account with e-mail userID.
	local func(ctx context.Context, userID string) (found, active, admin bool, err error)
	// sso reports the SSO user userID (App.ssoUserState).
	sso func(ctx context.Context, userID string) (known, active, admin bool, err error)

	// cache holds the local answers, userStateTTL each.
	cache *ttlcache.Cache[string, localState]
}

// state is http.Config.UserState. A failed lookup is an error, not
// cached: the request fails rather than passing or signing out.
func (u *userStates) state(ctx context.Context, userID string) (docflow.UserState, error) {
	if userID == "" {
		return docflow.UserState{}, nil
	}
	if userID == docflow.AdminUserID(u.settings) {
		return docflow.UserState{SignIn: true, Admin: true}, nil
	}
	l, err := u.localState(ctx, userID)
	if err != nil {
		return docflow.UserState{}, err
	}
	if l.found {
		return docflow.UserState{SignIn: l.active, Admin: l.active && l.admin}, nil
	}
	known, active, admin, err := u.sso(ctx, userID)
	if err != nil {
		return docflow.UserState{}, err
	}
	return docflow.UserState{SignIn: known && active, Admin: known && active && admin}, nil
}

// localState answers from the cache, or asks the store.
func (u *userStates) localState(ctx context.Context, userID string) (localState, error) {
	now := time.Now()
	if e, ok := u.cache.Get(userID); ok {
		return e, nil
	}
	found, active, admin, err := u.local(ctx, userID)
	if err != nil {
		return localState{}, err
	}
	e := localState{found: found, active: active, admin: admin}
	u.cache.AddAt(userID, e, now)
	return e, nil
}

// isAdmin is postgres.WebhookStore.HookOwnerAdmin: whether userID is an
// administrator now.
func (u *userStates) isAdmin(ctx context.Context, userID string) (bool, error) {
	st, err := u.state(ctx, userID)
	return st.Admin, err
}

// forget drops userID's answer (after a sign-in, which read it afresh).
func (u *userStates) forget(userID string) { u.cache.Remove(userID) }

// forgetAll drops every answer (an account changed).
func (u *userStates) forgetAll() { u.cache.Purge() }
