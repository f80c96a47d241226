package http

import (
	"context"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// MobileProfileStore is what the phone app's profile routes ask of
// storage.
type MobileProfileStore interface {
	// ProfileFacts reads what userID's profile is made of (empty facts
	// for a user storage knows nothing of).
	ProfileFacts(ctx context.Context, userID string) (docflow.ProfileFacts, error)
	// SetPreferredLanguage stores userID's language (checked), creating
	// its profile when it has none.
	SetPreferredLanguage(ctx context.Context, userID, lang string) error
}

// MobileAppDeps are what the phone app's routes beside push registration
// need: the profile store and the QR login's challenges.
type MobileAppDeps struct {
	Profiles MobileProfileStore
	QR       QRChallengeStore
}

// MountMobileApp mounts the rest of the Mobile namespace: the token a
// signed-in browser makes for the app (generate-token), the app's
// profile (whoami), the language preference, and QR login (qr_login.go).
func (s *Server) MountMobileApp(d MobileAppDeps) {
	if d.Profiles == nil || d.QR == nil {
		panic("http: MountMobileApp needs Profiles and QR")
	}
	h := &mobileAppHandlers{s: s, d: d}
	// NOTE: a browser session specifically: a token cannot mint more
	// tokens for itself here (a bearer token is 401).
	s.Handle("POST", "/api/mobile/generate-token", Route{Auth: AuthSession, Limit: LimitAuth}, h.generateToken, docMobileGenerateToken)
	s.Handle("GET", "/api/mobile/whoami", Route{Auth: AuthUser}, h.whoami, docMobileWhoami)
	s.Handle("POST", "/api/i18n/language", Route{Auth: AuthUser}, h.language, docLanguage)
	s.mountQRLogin(h)
}

type mobileAppHandlers struct {
	s *Server
	d MobileAppDeps
}

// mobileTokenName is the name of a token handed to the app for
// deviceName: "Mobile App – <device_name>", as the token list shows it.
func mobileTokenName(deviceName string) string {
	return "Mobile App – " + deviceName
}

// deviceNameOf checks an optional device_name; fallback names the token
// when the app sent none.
func deviceNameOf(name *string, fallback string) (string, error) {
	if name == nil {
		return fallback, nil
	}
	n := strings.TrimSpace(*name)
	if err := docflow.CheckDeviceName(n); err != nil {
		return "", invalid("device_name", "%s", docflow.ErrorMessage(err))
	}
	if n == "" {
		return fallback, nil
	}
	return n, nil
}

// mobileTokenAnswer is the answer that hands the app a token (shown once).
func mobileTokenAnswer(t *docflow.APIToken) appToken {
	return appToken{Token: t.Token, TokenID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt}
}

// generateToken is POST /api/mobile/generate-token {device_name}: the
// signed-in browser's user gets an API token for the app, valid
// MOBILE_TOKEN_LIFETIME_DAYS, named after the device (201, token shown
// once; audited as every token creation).
func (h *mobileAppHandlers) generateToken(c *fasthttp.RequestCtx) error {
	var req struct {
		DeviceName *string `json:"device_name"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.DeviceName == nil || strings.TrimSpace(*req.DeviceName) == "" {
		return invalid("device_name", "device_name is required: the name of the phone, shown in the token list")
	}
	name, err := deviceNameOf(req.DeviceName, "")
	if err != nil {
		return err
	}
	exp := h.s.mobileTokenExpiry()
	t, err := IssueToken(c, h.s.cfg.Tokens, h.s.tokenOwner(CurrentUser(c)), mobileTokenName(name), &exp)
	if err != nil {
		return err
	}
	h.s.auditTokenCreate(c, t, "")
	writeJSON(c, fasthttp.StatusCreated, mobileTokenAnswer(t))
	return nil
}

// whoami is GET /api/mobile/whoami: the profile of the token's (or
// session's) user.
func (h *mobileAppHandlers) whoami(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	owner := h.s.tokenOwner(u)
	f, err := h.d.Profiles.ProfileFacts(RequestContext(c), owner)
	if err != nil {
		return err
	}
	if f.LocalName == "" && u.DisplayName != "" && !u.Anonymous {
		f.LocalName = u.DisplayName
	}
	writeJSON(c, fasthttp.StatusOK, docflow.MobileProfileOf(owner, u.IsAdmin, f))
	return nil
}

// language is POST /api/i18n/language {language}: the user's language
// preference, one of en, de, es, fr, it (else 422); answers
// {preferred_language}.
func (h *mobileAppHandlers) language(c *fasthttp.RequestCtx) error {
	var req struct {
		Language *string `json:"language"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Language == nil {
		return invalid("language", "language is required (one of %s)", strings.Join(docflow.ProfileLanguages, ", "))
	}
	lang, err := docflow.CheckLanguage(*req.Language)
	if err != nil {
		return invalid("language", "%s", docflow.ErrorMessage(err))
	}
	if err := h.d.Profiles.SetPreferredLanguage(RequestContext(c), h.s.tokenOwner(CurrentUser(c)), lang); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, languageSet{PreferredLanguage: lang})
	return nil
}
