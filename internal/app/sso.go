package app

import (
	"context"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/ttlcache"
	"docflow/storage/postgres"
	"docflow/streams"
)

// ssoState is what a process knows of single sign-on beyond its store:
// the provider check of SSO users (the HTTP server's, once built), one
// check per user at a time, and the users whose check failed lately.
type ssoState struct {
	store *postgres.SSOStore
	check func(ctx context.Context, u docflow.SSOUser) (*dfhttp.SSOCheck, error)

	group singleflight.Group
	// failed holds the users whose check with the provider failed for
	// want of an answer: for ssoRetryAfter they are not asked again (and
	// are no admins meanwhile).
	failed *ttlcache.Cache[string, struct{}]
}

// ssoRetryAfter is how long a check that found the provider unreachable
// is remembered, so that an outage does not hold each request of the
// user for a whole provider timeout.
const ssoRetryAfter = 30 * time.Second

// ssoFailedMax bounds the users remembered as failed; beyond it the least
// recently recorded is asked again sooner.
const ssoFailedMax = 10_000

// startSSO builds the SSO store (refresh tokens sealed with the settings'
// cipher) and this process's SSO state. Every role builds it: the
// user-state check asks ssoUserState in workers too (the delivery's
// fan-out), where no provider check is wired (m.sso.check nil).
func (m *App) startSSO() *postgres.SSOStore {
	store := postgres.NewSSOStore(m.DB, m.cipher)
	m.sso = &ssoState{store: store, failed: ttlcache.New[string, struct{}](ssoFailedMax, ssoRetryAfter, m.now)}
	return store
}

// mountSSO mounts single sign-on (GET /oauth-login, /oauth-callback, the
// administrators' SSO routes) and the mobile hand-off's code exchange,
// lets the SSO state check users with the provider through srv, and
// notices the risky SSO configurations.
func (m *App) mountSSO(srv *dfhttp.Server, sso *postgres.SSOStore) {
	srv.MountSSO(dfhttp.SSODeps{Store: sso, Admin: sso, Signups: postgres.NewProfileStore(m.DB, streams.EncodeEvent)})
	srv.MountMobileHandOff(dfhttp.MobileHandOffDeps{Codes: postgres.NewMobileCodeStore(m.DB)})
	m.sso.check = srv.CheckSSOUser
	m.ssoNotices()
}

// ssoNotices warns, at every start, about SSO turned on (OIDC_ISSUER and
// OIDC_CLIENT_ID set) in a way that lets too many people in or make
// themselves administrators.
func (m *App) ssoNotices() {
	if docflow.OIDCIssuer.Get(m.Settings) == "" || docflow.OIDCClientID.Get(m.Settings) == "" {
		return
	}
	if len(docflow.OIDCAllowedDomains.Get(m.Settings)) == 0 && len(docflow.OIDCAllowedGroups.Get(m.Settings)) == 0 {
		m.notice("Single sign-on is on with no allow-list: every account at the provider " + docflow.OIDCIssuer.Get(m.Settings) +
			" can sign in. Set OIDC_ALLOWED_DOMAINS or OIDC_ALLOWED_GROUPS.")
	}
	if docflow.AdminGroupName.Get(m.Settings) == "admin" {
		m.notice("Single sign-on makes every member of a provider group named \"admin\" an administrator (ADMIN_GROUP_NAME's default). " +
			"Where users can create groups, set ADMIN_GROUP_NAME to a group only the provider's administrators control, or empty for no SSO administrators.")
	}
	if !docflow.MultiUserEnabled.Get(m.Settings) {
		m.notice("Single sign-on is on while MULTI_USER_ENABLED is false: every SSO user sees, changes and deletes every document. Set MULTI_USER_ENABLED=true.")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if list, err := m.sso.store.UnlinkedLocalSSOUsers(ctx, 6); err != nil {
		m.Log.Warn().Err(err).Msg("list local accounts signed into through SSO")
	} else if len(list) > 0 {
		more := ""
		if len(list) > 5 {
			list, more = list[:5], " and others"
		}
		m.notice("Local accounts were signed into through single sign-on before SSO identities were bound to the provider's subject: " +
			strings.Join(list, ", ") + more + ". Their SSO sign-ins are refused until an administrator links each to its SSO identity " +
			"(PUT /api/admin/users/local/{id}/sso-link) or releases it (DELETE /api/admin/users/{user_id}/sso-identity); review their API tokens.")
	}
}

// ssoUserState says what userID is as an SSO user now: known (it has an
// SSO identity), active (not refused by the provider) and admin (the
// provider's admin status, still vouched for).
//
// The admin status stored at the last verification with the provider (a
// sign-in, or a check) holds for SSO_ADMIN_RECHECK (default 15 min).
// After it, the provider is asked again with the refresh token kept at
// sign-in, once per user at a time: its answer is stored and holds for
// the next SSO_ADMIN_RECHECK. When it cannot be asked (no refresh token,
// another issuer, unreachable) the user is no admin until it can be, or
// until the next sign-in; when it refuses the user (the refresh token
// refused, or the user no longer allowed) the user is disabled: not
// active, no admin, until its next successful SSO sign-in. A user who
// is not an administrator and has no refresh token is not asked (there is
// nothing to take away but what the provider refuses at sign-in).
//
// err is for a failed lookup; the caller treats it as no rights.
func (m *App) ssoUserState(ctx context.Context, userID string) (known, active, admin bool, err error) {
	if userID == "" || m.sso == nil {
		return false, false, false, nil
	}
	u, err := m.sso.store.FindSSOUser(ctx, userID)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return false, false, false, nil
	}
	if err != nil {
		return false, false, false, err
	}
	if u.DisabledAt != nil {
		return true, false, false, nil
	}
	now := m.now()
	recheck := docflow.SSOAdminRecheck.Get(m.Settings)
	if now.Sub(u.VerifiedAt) < recheck {
		return true, true, u.IsAdmin, nil
	}
	if u.RefreshToken == "" || m.sso.check == nil || m.sso.recentlyFailed(userID) {
		return true, true, false, nil
	}
	// NOTE: not the first caller's cancellation: the others wait on it.
	cctx := context.WithoutCancel(ctx)
	v, err, _ := m.sso.group.Do(userID, func() (any, error) { return m.recheckSSOUser(cctx, u) })
	if err != nil {
		return false, false, false, err
	}
	st := v.(ssoCheckResult)
	return true, st.active, st.admin, nil
}

type ssoCheckResult struct{ active, admin bool }

// recheckSSOUser asks the provider about u again and stores the answer.
func (m *App) recheckSSOUser(ctx context.Context, u *docflow.SSOUser) (ssoCheckResult, error) {
	res, err := m.sso.check(ctx, *u)
	now := m.now()
	switch docflow.ErrorCode(err) {
	case "":
		if _, err := m.sso.store.RecordSSOCheck(ctx, u.UserID, u.VerifiedAt, res.IsAdmin, res.RefreshToken, now); err != nil {
			return ssoCheckResult{}, err
		}
		if res.IsAdmin != u.IsAdmin {
			m.Log.Info().Str("user", u.UserID).Bool("admin", res.IsAdmin).Msg("SSO admin status changed at the provider")
		}
		return ssoCheckResult{active: true, admin: res.IsAdmin}, nil
	case docflow.EFORBIDDEN:
		// Another process may have used the refresh token just before
		// (providers that rotate refresh tokens refuse the old one): its
		// answer, if recorded, stands.
		if now2, err := m.sso.store.FindSSOUser(ctx, u.UserID); err == nil && !now2.VerifiedAt.Equal(u.VerifiedAt) {
			return ssoCheckResult{active: now2.DisabledAt == nil, admin: now2.DisabledAt == nil && now2.IsAdmin}, nil
		}
		why := docflow.ErrorMessage(err)
		if _, err := m.sso.store.DisableSSOUser(ctx, u.UserID, u.VerifiedAt, why, now); err != nil {
			return ssoCheckResult{}, err
		}
		m.Log.Warn().Str("user", u.UserID).Str("why", why).Msg("SSO user refused by the provider: disabled until its next sign-in")
		return ssoCheckResult{active: false}, nil
	default:
		m.Log.Warn().Err(err).Str("user", u.UserID).Msg("SSO user cannot be checked with the provider: no admin rights meanwhile")
		m.sso.failed.AddAt(u.UserID, struct{}{}, now)
		return ssoCheckResult{active: true}, nil
	}
}

// recentlyFailed reports whether userID's check failed less than
// ssoRetryAfter ago.
func (s *ssoState) recentlyFailed(userID string) bool {
	_, ok := s.failed.Get(userID)
	return ok
}

// now is the process's clock (Config.Now, else the real one).
func (m *App) now() time.Time {
	if m.cfg.Now != nil {
		return m.cfg.Now()
	}
	return time.Now()
}
