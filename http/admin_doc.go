package http

import "docflow"

// The request and response types of the administrators' routes (users,
// local accounts, SSO links, the audit log) and of file ownership, and the
// documentation of their routes (/openapi.json).

type profileList struct {
	Users   []docflow.UserProfile `json:"users"`
	Total   int                   `json:"total"`
	Page    int                   `json:"page"`
	PerPage int                   `json:"per_page"`
	Pages   int                   `json:"pages"`
}

// profilePut describes the PUT body parseProfileUpdate reads key by key
// (an explicit null clears a field, which a struct cannot tell apart).
type profilePut struct {
	DisplayName       *string `json:"display_name"`
	DailyUploadLimit  *int    `json:"daily_upload_limit" min:"0" doc:"0 = unlimited; null = DEFAULT_DAILY_UPLOAD_LIMIT"`
	Notes             *string `json:"notes"`
	IsBlocked         *bool   `json:"is_blocked" doc:"true stops the user's uploads"`
	SubscriptionTier  *string `json:"subscription_tier"`
	PreferredLanguage *string `json:"preferred_language" enum:"en,de,es,fr,it"`
}

type paymentIssue struct {
	Issue *string `json:"issue" openapi:"required" doc:"What went wrong, 1 to 2048 characters"`
}

type paymentIssueAck struct {
	Acknowledged bool                 `json:"acknowledged"`
	UserID       string               `json:"user_id"`
	Profile      *docflow.UserProfile `json:"profile"`
}

type userIDs struct {
	Users []string `json:"users"`
}

type passwordSet struct {
	Password string `json:"password" openapi:"required" doc:"At least 8 characters"`
}

type resetMailSent struct {
	Sent   bool   `json:"sent"`
	Reason string `json:"reason,omitempty"`
}

type ssoLinkRequest struct {
	Issuer  string `json:"issuer" openapi:"required"`
	Subject string `json:"subject" openapi:"required"`
}

type auditPage struct {
	Entries []docflow.AuditEntry `json:"entries"`
	Total   int                  `json:"total"`
	Page    int                  `json:"page"`
	PerPage int                  `json:"per_page"`
	Pages   int                  `json:"pages"`
}

var userIDParam = Param{Name: "user_id", In: "path", Doc: "The user's id"}

var (
	docListProfiles = Doc{
		Summary: "List user profiles",
		Params: []Param{{Name: "q", Doc: "Part of the user id or display name"},
			{Name: "page", Type: "integer", Default: 1, Min: 1}, {Name: "per_page", Type: "integer", Default: 25, Min: 1, Max: 100}},
		Responses: []Response{OK(profileList{})},
		Examples:  []Example{{Name: "list", Summary: "The first page of users"}},
	}
	docProfileDetail = Doc{
		Summary:   "A user's profile with document statistics",
		Params:    []Param{userIDParam},
		Responses: []Response{OK(docflow.ProfileDetail{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "detail", Summary: "One user", Params: map[string]string{"user_id": "colleague@example.com"}}},
	}
	docPutProfile = Doc{
		Summary: "Create or change a user's profile",
		Description: "Every field is optional; null clears display_name, daily_upload_limit, notes and preferred_language. " +
			"daily_upload_limit 0 is unlimited; is_blocked stops uploads; a tier change emits user.plan_changed.",
		Params:    []Param{userIDParam},
		Body:      profilePut{},
		Responses: []Response{OK(docflow.UserProfile{})},
		Examples: []Example{{Name: "limit", Summary: "Allow 50 uploads a day", Params: map[string]string{"user_id": "colleague@example.com"},
			Body: map[string]any{"daily_upload_limit": 50}}},
	}
	docDeleteProfile = Doc{
		Summary:   "Remove a user's profile (the documents stay)",
		Params:    []Param{userIDParam},
		Responses: []Response{NoContent()},
		Errors:    []int{404},
	}
	docPaymentIssue = Doc{
		Summary:   "Report a payment problem of a user (emits user.payment_issue)",
		Params:    []Param{userIDParam},
		Body:      paymentIssue{},
		Responses: []Response{OK(paymentIssueAck{})},
		Errors:    []int{404},
	}
	docSearchUsers = Doc{
		Summary: "Find users by id, name, e-mail or user name",
		Params: []Param{{Name: "q", Required: true, Doc: "Part of the name"},
			{Name: "limit", Type: "integer", Default: 5, Min: 1, Max: 20}},
		Responses: []Response{OK(userIDs{})},
		Examples:  []Example{{Name: "search", Summary: "Users named like coll", Params: map[string]string{"q": "coll"}}},
	}
	docMentionable = Doc{
		Summary:   "The users a comment can @mention",
		Responses: []Response{OK([]docflow.Mentionable{})},
		Examples:  []Example{{Name: "list", Summary: "Everyone not blocked, by name"}},
	}

	docListLocalUsers = Doc{
		Summary:   "List local accounts",
		Tag:       "admin",
		Responses: []Response{OK([]*docflow.LocalUser{})},
		Examples:  []Example{{Name: "list", Summary: "Every local account"}},
	}
	docCreateLocalUser = Doc{
		Summary:     "Create a local account",
		Tag:         "admin",
		Description: "password needs at least 8 characters; 409 when the e-mail or user name is taken.",
		Body:        docflow.LocalUserInput{},
		Responses:   []Response{Created(docflow.LocalUser{})},
		Errors:      []int{409},
		Examples: []Example{{Name: "ann", Summary: "A new colleague", Body: map[string]any{"email": "ann@example.com", "username": "ann",
			"display_name": "Ann", "password": "a long password"}}},
	}
	docUpdateLocalUser = Doc{
		Summary:   "Change a local account",
		Tag:       "admin",
		Body:      docflow.LocalUserPatch{},
		Responses: []Response{OK(docflow.LocalUser{})},
		Errors:    []int{404, 409},
	}
	docDeleteLocalUser = Doc{
		Summary:   "Delete a local account",
		Tag:       "admin",
		Responses: []Response{NoContent()},
		Errors:    []int{404},
	}
	docSetPassword = Doc{
		Summary:   "Set a local account's password",
		Tag:       "admin",
		Body:      passwordSet{},
		Responses: []Response{OK(Detail{})},
		Errors:    []int{404},
	}
	docSendPasswordReset = Doc{
		Summary:   "Mail a local account a password reset link",
		Tag:       "admin",
		NoBody:    true,
		Responses: []Response{OK(resetMailSent{})},
		Errors:    []int{404},
	}
	docGetSSOLink = Doc{
		Summary:   "The SSO identity a local account is linked to",
		Tag:       "admin",
		Responses: []Response{OK(docflow.SSOLink{})},
		Errors:    []int{404},
	}
	docPutSSOLink = Doc{
		Summary:   "Link a local account to an SSO identity",
		Tag:       "admin",
		Body:      ssoLinkRequest{},
		Responses: []Response{OK(docflow.SSOLink{})},
		Errors:    []int{404, 409},
	}
	docDeleteSSOLink = Doc{
		Summary:   "Remove a local account's SSO link",
		Tag:       "admin",
		Responses: []Response{OK(Detail{})},
		Errors:    []int{404},
	}
	docGetSSOIdentity = Doc{
		Summary:   "The SSO identity of a user",
		Tag:       "admin",
		Params:    []Param{userIDParam},
		Responses: []Response{OK(docflow.SSOUser{})},
		Errors:    []int{404},
	}
	docForgetSSOIdentity = Doc{
		Summary:   "Release a user's SSO identity",
		Tag:       "admin",
		Params:    []Param{userIDParam},
		Responses: []Response{OK(Detail{})},
		Errors:    []int{404},
	}
	docAuditLog = Doc{
		Summary: "The audit log, newest first",
		Tag:     "admin",
		Params: []Param{{Name: "actor"}, {Name: "action", Doc: "e.g. share.create, api_token.create"},
			{Name: "page", Type: "integer", Default: 1, Min: 1}, {Name: "per_page", Type: "integer", Min: 1}},
		Responses: []Response{OK(auditPage{})},
		Examples:  []Example{{Name: "log", Summary: "The newest entries"}},
	}

	docClaim = Doc{
		Summary:     "Claim an unowned file",
		Description: "Multi-user mode only (400 otherwise).",
		NoBody:      true,
		Responses:   []Response{OK(map[string]any{})},
		Errors:      []int{400, 403, 404},
	}
	docBulkClaim = Doc{
		Summary:   "Claim unowned files (a JSON array of ids)",
		Body:      fileIDs,
		Responses: []Response{OK(map[string]any{})},
		Errors:    []int{400},
	}
	docAssignOwner = Doc{
		Summary:     "Give files an owner (administrators)",
		Description: "owner_id in the query; the body, a JSON array of ids, is optional (without it every unowned file).",
		Params:      []Param{{Name: "owner_id", Required: true}},
		Body:        fileIDs,
		Responses:   []Response{OK(map[string]any{})},
		Errors:      []int{400},
	}
)
