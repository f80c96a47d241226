package app

import (
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
