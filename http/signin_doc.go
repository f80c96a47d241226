package http

import "time"

// The request and response types of signing in and self-service, and the
// documentation of their routes (/openapi.json).

type mobileTokenRequest struct {
	Code         string `json:"code" openapi:"required" doc:"The one-time code of the redirect"`
	CodeVerifier string `json:"code_verifier" openapi:"required" doc:"The PKCE verifier of the code_challenge sent to /login"`
	RedirectURI  string `json:"redirect_uri"`
	DeviceName   string `json:"device_name" doc:"Names the token: Mobile App – <device_name>"`
}

type mobileToken struct {
	Token     string     `json:"token" doc:"Shown once"`
	TokenID   int64      `json:"token_id"`
	Name      string     `json:"name"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
}

type selfServiceRequest struct {
	Email string `json:"email" openapi:"required" example:"ann@example.com"`
}

type passwordReset struct {
	Token       string `json:"token" openapi:"required" doc:"The token of the reset mail"`
	NewPassword string `json:"new_password" openapi:"required" doc:"At least 8 characters"`
	Confirm     string `json:"new_password_confirm" openapi:"required"`
}

var loginFields = []FormField{{Name: "username", Required: true}, {Name: "password", Required: true},
	{Name: "next", Doc: "Where to go after signing in (a path of this site)"}}

var redirect = func(doc string) Response {
	return Response{Status: 303, Doc: doc, Headers: map[string]string{"Location": "Where to go"}}
}

var (
	docMobileToken = Doc{
		Summary:     "Exchange the mobile app's sign-in code for an API token",
		Tag:         "mobile",
		Description: "The code serves once, within minutes, and only with the verifier of its challenge; anything else is 400 Invalid or expired code.",
		Body:        mobileTokenRequest{},
		Responses:   []Response{Created(mobileToken{})},
		Errors:      []int{400},
	}
	docRequestPasswordReset = Doc{
		Summary:     "Mail a password reset link",
		Description: "The answer is the same whether or not an account has the address.",
		Body:        selfServiceRequest{},
		Responses:   []Response{OK(Detail{})},
		Examples:    []Example{{Name: "reset", Summary: "Ask for a reset link", Body: map[string]any{"email": "nobody@example.com"}}},
	}
	docForgotUsername = Doc{
		Summary:     "Mail a reminder of the user name",
		Description: "The answer is the same whether or not an account has the address.",
		Body:        selfServiceRequest{},
		Responses:   []Response{OK(Detail{})},
		Examples:    []Example{{Name: "remind", Summary: "Ask for the user name", Body: map[string]any{"email": "nobody@example.com"}}},
	}
	docResetPassword = Doc{
		Summary:   "Set a new password with a reset token",
		Body:      passwordReset{},
		Responses: []Response{OK(Detail{})},
		Errors:    []int{400},
		Examples: []Example{{Name: "expired", Summary: "An unknown or expired token is refused", Status: 400,
			Body: map[string]any{"token": "not-a-token", "new_password": "a long password", "new_password_confirm": "a long password"}}},
	}
	docForgotPage = Doc{Summary: "The forgotten-password page", Responses: []Response{HTML("The page")}}
	docForgotForm = Doc{
		Summary:   "Send the forgotten-password form",
		Form:      []FormField{{Name: "email", Required: true}, {Name: "what", Doc: "username for a user name reminder"}},
		Responses: []Response{HTML("The page, saying a message is on its way")},
	}
	docResetPage = Doc{
		Summary:   "The page that sets a new password",
		Params:    []Param{{Name: "token", Doc: "The token of the reset mail"}},
		Responses: []Response{HTML("The page")},
	}
	docResetForm = Doc{
		Summary:   "Send the new password",
		Form:      []FormField{{Name: "token", Required: true}, {Name: "new_password", Required: true}, {Name: "new_password_confirm", Required: true}},
		Responses: []Response{HTML("The page, saying whether it worked")},
	}
	docLoginPage = Doc{
		Summary: "The sign-in page",
		Params: []Param{{Name: "next", Doc: "Where to go after signing in"},
			{Name: "mobile", Doc: "1: the mobile app's sign-in (with redirect_uri, code_challenge, code_challenge_method)"}},
		Responses: []Response{HTML("The page")},
	}
	docLogin = Doc{
		Summary:     "Sign in with a user name and password",
		Description: "Sets the session cookie and redirects to next. Failed attempts slow down per client address.",
		Form:        loginFields,
		Responses:   []Response{redirect("Signed in"), HTML("The page again, with the error")},
		Errors:      []int{401},
	}
	docLogout = Doc{
		Summary:   "Sign out",
		NoBody:    true,
		Responses: []Response{redirect("To the sign-in page")},
	}
	docSSOLogin = Doc{
		Summary:   "Sign in with the OpenID Connect provider",
		Params:    []Param{{Name: "next"}},
		Responses: []Response{{Status: 302, Doc: "To the provider", Headers: map[string]string{"Location": "The provider's authorization URL"}}},
	}
	docSSOCallback = Doc{
		Summary:   "Where the OpenID Connect provider returns",
		Params:    []Param{{Name: "code"}, {Name: "state"}},
		Responses: []Response{redirect("Signed in"), HTML("The sign-in page with the error")},
		Errors:    []int{400},
	}
)
