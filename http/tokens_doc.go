package http

import "docflow"

// The documentation of the API token routes (/openapi.json).

var (
	docCreateToken = Doc{
		Summary: "Create an API token",
		Description: "The answer is the only time the token itself is shown: store it. Send it as `Authorization: Bearer " +
			docflow.TokenPrefix + "…`. expires_in_days (1 to 3650) sets an expiry; without it the token does not expire.",
		Body:      tokenCreate{},
		Responses: []Response{Created(docflow.APIToken{})},
		Examples: []Example{{Name: "script", Summary: "A token for a backup script, valid 90 days",
			Body: map[string]any{"name": "backup script", "expires_in_days": 90}}},
	}
	docListTokens = Doc{
		Summary:   "List the caller's API tokens",
		Responses: []Response{OK([]*docflow.APIToken{})},
		Examples:  []Example{{Name: "list", Summary: "Active and revoked tokens, without the tokens themselves"}},
	}
	docDeleteToken = Doc{
		Summary:     "Revoke an API token, or delete a revoked one",
		Description: "An active token is revoked (kept for the audit, detail Token revoked); a revoked one is deleted (detail Token deleted).",
		Responses:   []Response{OK(Detail{})},
		Errors:      []int{404},
		Examples:    []Example{{Name: "revoke", Summary: "Revoke a token", Params: map[string]string{"token_id": "12"}}},
	}
	docReactivateToken = Doc{
		Summary: "Reactivate a revoked API token",
		Description: "A token acting for its owner cannot bring back one revoked before it was itself last revoked (403): " +
			"sign in, or use a token that was not.",
		NoBody:    true,
		Responses: []Response{OK(docflow.APIToken{})},
		Errors:    []int{403, 404, 409},
	}
	docAdminListTokens = Doc{
		Summary:   "List a user's API tokens",
		Params:    []Param{{Name: "user_id", In: "path", Doc: "The user's id"}},
		Responses: []Response{OK([]*docflow.APIToken{})},
		Examples:  []Example{{Name: "list", Summary: "A colleague's tokens", Params: map[string]string{"user_id": "colleague@example.com"}}},
	}
	docAdminDeleteToken = Doc{
		Summary:   "Revoke or delete a user's API token",
		Params:    []Param{{Name: "user_id", In: "path", Doc: "The user's id"}},
		Responses: []Response{OK(Detail{})},
		Errors:    []int{404},
	}
)
