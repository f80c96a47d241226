package http

import (
	"time"

	"docflow"
)

// The documentation of the phone app's routes besides devices
// (generate-token, whoami, the language) and of QR login (/openapi.json),
// with the shapes of their bodies and answers.

type appTokenRequest struct {
	DeviceName *string `json:"device_name" openapi:"required" doc:"The phone's name, shown in the token list" example:"Pixel 8"`
}

// appToken is the answer that carries a new API token (shown once).
type appToken struct {
	Token     string     `json:"token" doc:"The API token, shown only here"`
	TokenID   int64      `json:"token_id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at" doc:"MOBILE_TOKEN_LIFETIME_DAYS from now"`
}

type languageRequest struct {
	Language *string `json:"language" openapi:"required" enum:"en,de,es,fr,it"`
}

type languageSet struct {
	PreferredLanguage string `json:"preferred_language"`
}

type qrChallengeCreated struct {
	ChallengeToken string    `json:"challenge_token"`
	ExpiresAt      time.Time `json:"expires_at"`
	QRURL          string    `json:"qr_url" doc:"What the QR code carries: the app's scheme, the challenge and the server"`
	QRImageURL     string    `json:"qr_image_url" doc:"The QR code as SVG"`
	Server         string    `json:"server"`
}

type qrChallengeStatus struct {
	Status     string     `json:"status" enum:"pending,claimed,expired"`
	ExpiresAt  time.Time  `json:"expires_at"`
	ClaimedAt  *time.Time `json:"claimed_at"`
	DeviceName string     `json:"device_name"`
}

type qrClaimRequest struct {
	ChallengeToken string  `json:"challenge_token" openapi:"required" doc:"The token of the scanned QR code"`
	DeviceName     *string `json:"device_name" doc:"The phone's name (default: QR login)"`
}

var qrTokenParam = Param{Name: "token", In: "path", Required: true, Doc: "The challenge token"}

var (
	docMobileGenerateToken = Doc{
		Summary:     "Make an API token for the phone app (signed-in browser only)",
		Description: "A browser session is required: a bearer token is 401. The token is valid MOBILE_TOKEN_LIFETIME_DAYS and shown once.",
		Tag:         "mobile",
		Body:        appTokenRequest{},
		Responses:   []Response{Created(appToken{})},
	}
	docMobileWhoami = Doc{
		Summary:   "The profile of the token's (or session's) user",
		Tag:       "mobile",
		Responses: []Response{OK(docflow.MobileProfile{})},
		Examples:  []Example{{Name: "whoami", Summary: "Who am I"}},
	}
	docLanguage = Doc{
		Summary:   "Set the user's language preference",
		Tag:       "mobile",
		Body:      languageRequest{},
		Responses: []Response{OK(languageSet{})},
		Examples:  []Example{{Name: "german", Summary: "Prefer German", Body: map[string]any{"language": "de"}}},
	}
	docQRChallenge = Doc{
		Summary:     "Start a QR login for the signed-in browser's user",
		Description: "The phone scans qr_url's QR code (qr_image_url) and claims the challenge within five minutes.",
		Tag:         "mobile",
		NoBody:      true,
		Responses:   []Response{Created(qrChallengeCreated{})},
	}
	docQRStatus = Doc{
		Summary:   "The status of one's own QR login challenge",
		Tag:       "mobile",
		Params:    []Param{qrTokenParam},
		Responses: []Response{OK(qrChallengeStatus{})},
		Errors:    []int{404},
	}
	docQRImage = Doc{
		Summary:   "The QR code of a pending challenge, as SVG",
		Tag:       "mobile",
		Params:    []Param{qrTokenParam},
		Responses: []Response{{Status: 200, Binary: true, ContentType: "image/svg+xml", Doc: "The QR code"}},
		Errors:    []int{404},
	}
	docQRClaim = Doc{
		Summary: "Claim a scanned QR login challenge (the phone)",
		Description: "The challenge is the credential: the first claim within five minutes gets an API token of the " +
			"challenge's user; an unknown, expired or used challenge is 401 with what to do.",
		Tag:       "mobile",
		Body:      qrClaimRequest{},
		Responses: []Response{Created(appToken{})},
		Errors:    []int{401},
	}
	docQRLoginPage = Doc{
		Summary:   "The QR login page: a QR code for the phone app, followed until claimed",
		Tag:       "mobile",
		Responses: []Response{HTML("The page"), {Status: 303, Doc: "To /login when not signed in", Headers: map[string]string{"Location": "/login?next=/qr-login"}}},
	}
)
