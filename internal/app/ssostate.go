package app

import "context"

// ssoUserState reports what the SSO side knows of userID now: whether it
// is an SSO user (known), whether it may sign in (active), and whether it
// is an administrator (admin). The user-state check (userstate.go) asks
// it for every id that is not the local admin account nor an inactive
// local account, so a token's or a session's rights follow it.
//
// Today: an SSO user is one with a recorded SSO sign-in (sso_users); a
// known SSO user may sign in, and is an administrator while its latest
// sign-in put it in ADMIN_GROUP_NAME.
func (m *App) ssoUserState(ctx context.Context, userID string) (known, active, admin bool, err error) {
	known, admin, err = m.userStore.SSOUserState(ctx, userID)
	if err != nil || !known {
		return false, false, false, err
	}
	return true, true, admin, nil
}
