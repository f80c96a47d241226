package app

import (
	"context"

	"docflow"
	dfhttp "docflow/http"
	"docflow/storage/postgres"
	"docflow/streams"
)

// mountSSO mounts single sign-on (GET /oauth-login, /oauth-callback):
// attempts and sign-ins in the SSO store, first sign-ins creating the
// profile with user.signup.
func (m *App) mountSSO(srv *dfhttp.Server, sso *postgres.SSOStore) {
	srv.MountSSO(dfhttp.SSODeps{Store: sso, Signups: postgres.NewProfileService(m.DB, streams.EncodeEvent)})
}

// ssoAdmin reports whether userID's latest SSO sign-in put it in
// ADMIN_GROUP_NAME, so that its API tokens are an administrator's too. A
// failed lookup is no admin right.
func (m *App) ssoAdmin(sso *postgres.SSOStore) func(ctx context.Context, userID string) bool {
	return func(ctx context.Context, userID string) bool {
		if userID == "" {
			return false
		}
		admin, err := sso.IsSSOAdmin(ctx, userID)
		if err != nil {
			m.Log.Warn().Err(err).Msg("check SSO admin")
			return false
		}
		return admin
	}
}

// isAdmin is http.Config.IsAdmin: the local admin account
// (ADMIN_USERNAME), or an SSO administrator.
func (m *App) isAdmin(sso *postgres.SSOStore) func(ctx context.Context, userID string) bool {
	ssoAdmin := m.ssoAdmin(sso)
	return func(ctx context.Context, userID string) bool {
		if userID != "" && userID == docflow.AdminUserID(m.Settings) {
			return true
		}
		return ssoAdmin(ctx, userID)
	}
}
