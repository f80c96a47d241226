package docflow

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// This file holds the phone app's records beside the push devices
// (device.go): who the app's user is (GET /api/mobile/whoami), the
// language preference, and the QR login's challenge.

// MobileProfile is the answer of GET /api/mobile/whoami.
type MobileProfile struct {
	OwnerID     string `json:"owner_id"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
	AvatarURL   string `json:"avatar_url"`
	IsAdmin     bool   `json:"is_admin"`
	// PreferredLanguage is nil while the user saved none.
	PreferredLanguage *string `json:"preferred_language"`
}

// ProfileFacts is what storage knows of a user id for its mobile profile:
// the profile's display name and language, the local account's e-mail and
// name, the SSO identity's verified e-mail and picture ("" or nil each
// where there is none).
type ProfileFacts struct {
	ProfileName       string
	PreferredLanguage *string
	LocalEmail        string
	LocalName         string
	SSOEmail          string
	SSOPicture        string
}

// MobileProfileOf builds the profile of ownerID from what storage knows:
// the display name of the profile, else of the local account, else the
// user id; the e-mail of the local account, else of the SSO identity, else
// the user id when it is an address; the SSO provider's picture, else
// AvatarURL of the e-mail (or the user id).
func MobileProfileOf(ownerID string, isAdmin bool, f ProfileFacts) MobileProfile {
	p := MobileProfile{OwnerID: ownerID, IsAdmin: isAdmin, PreferredLanguage: f.PreferredLanguage}
	p.DisplayName = firstNonEmpty(f.ProfileName, f.LocalName, ownerID)
	p.Email = firstNonEmpty(f.LocalEmail, f.SSOEmail)
	if p.Email == "" && strings.Contains(ownerID, "@") {
		p.Email = ownerID
	}
	p.AvatarURL = f.SSOPicture
	if p.AvatarURL == "" {
		p.AvatarURL = GravatarURL(firstNonEmpty(p.Email, ownerID))
	}
	return p
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

// GravatarURL is the Gravatar-style picture of an address: the SHA-256 of
// the trimmed, lower-cased address, with an identicon for addresses
// Gravatar does not know (and for user ids that are no address). docflow
// never loads it; the app does.
func GravatarURL(email string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(email))))
	return "https://www.gravatar.com/avatar/" + hex.EncodeToString(sum[:]) + "?d=identicon&s=200"
}

// CheckPictureURL says whether an SSO provider's picture claim may be
// shown as an avatar: an absolute https (or http) URL with a host and no
// user info, at most 2048 bytes. Anything else is dropped, never stored.
func CheckPictureURL(u string) bool {
	if u == "" || len(u) > 2048 || !utf8.ValidString(u) {
		return false
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.User != nil {
		return false
	}
	return p.Scheme == "https" || p.Scheme == "http"
}

// CheckLanguage validates a language preference: one of ProfileLanguages
// (case-insensitive; the answer is lower-case).
func CheckLanguage(lang string) (string, error) {
	l := strings.ToLower(strings.TrimSpace(lang))
	if !slices.Contains(ProfileLanguages, l) {
		return "", Errorf(EINVALID, "language must be one of %s", strings.Join(ProfileLanguages, ", "))
	}
	return l, nil
}

// QRChallengeTTL is how long a QR login challenge may wait for the phone.
const QRChallengeTTL = 5 * time.Minute

// QR challenge statuses (GET /api/qr-auth/challenge/{token}).
const (
	QRPending = "pending"
	QRClaimed = "claimed"
	QRExpired = "expired"
)

// QRChallenge is a QR login in progress: a signed-in web user (UserID)
// shows a QR code carrying the challenge token; the phone that scans it
// claims the challenge once, before ExpiresAt, and gets an API token of
// UserID's. The token is known by its SHA-256 only (TokenHash).
type QRChallenge struct {
	TokenHash string
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// ClaimedAt, DeviceName and TokenID are set by the claim (TokenID
	// once the API token is issued).
	ClaimedAt  *time.Time
	DeviceName string
	TokenID    *int64
}

// Status is the challenge's status at now.
func (q *QRChallenge) Status(now time.Time) string {
	switch {
	case q.ClaimedAt != nil:
		return QRClaimed
	case !now.Before(q.ExpiresAt):
		return QRExpired
	}
	return QRPending
}

// QRLoginURL is what the QR code carries: the app's scheme, the challenge
// token and the server the app is to talk to.
func QRLoginURL(challenge, server string) string {
	return "docflow://qr-login?token=" + url.QueryEscape(challenge) + "&server=" + url.QueryEscape(server)
}
