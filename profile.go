package docflow

import "context"

// This file holds what admins manage about a user (the profile) and what
// every user may look up about the others (search, mentionable).

// Preferred languages a profile may name.
var ProfileLanguages = []string{"en", "de", "es", "fr", "it"}

// Limits of the profile and users APIs (interface.md, Limits).
const (
	ProfilesPerPageDefault = 25
	ProfilesPerPageMax     = 100
	UserSearchDefault      = 5
	UserSearchMax          = 20
	PaymentIssueMax        = 2048
	// MentionableMax caps GET /api/users/mentionable: the first this many
	// non-blocked profiles by display name (then user id).
	MentionableMax = 1000
)

// ProfileUpdate is a PUT of a profile: nil fields keep what the profile
// has (a new profile takes the defaults). The Set* flags tell an explicit
// JSON null (which clears the field) from an absent one.
type ProfileUpdate struct {
	DisplayName          *string
	SetDisplayName       bool
	DailyUploadLimit     *int
	SetDailyUploadLimit  bool
	Notes                *string
	SetNotes             bool
	IsBlocked            *bool
	SubscriptionTier     *string
	PreferredLanguage    *string
	SetPreferredLanguage bool
}

// ProfileFilter selects a page of profiles: Query is a case-insensitive
// substring of the user id or the display name ("" = all). Page counts
// from 1.
type ProfileFilter struct {
	Query   string
	Page    int
	PerPage int
}

// ProfileStats are a user's document statistics (the admin detail view).
type ProfileStats struct {
	ByStatus       map[string]int `json:"by_status"`
	BytesStored    int64          `json:"bytes_stored"`
	SharesGiven    int            `json:"shares_given"`
	SharesReceived int            `json:"shares_received"`
}

// ProfileDetail is a profile with its statistics. HasProfile is false for
// a user who owns documents but has no profile yet: the profile fields
// then carry the defaults.
type ProfileDetail struct {
	UserProfile
	HasProfile bool         `json:"has_profile"`
	Statistics ProfileStats `json:"statistics"`
}

// Mentionable is a user who may be @mentioned.
type Mentionable struct {
	UserID      string  `json:"user_id"`
	DisplayName *string `json:"display_name"`
}

// ProfileStore manages user profiles (the admin views) and answers the
// user look-ups every user may make.
type ProfileStore interface {
	// ListProfiles returns a page of users, by user id, with their
	// document_count and last_upload, and how many match in all. Users are
	// the profiles and the owners of documents without one.
	ListProfiles(ctx context.Context, f ProfileFilter) ([]UserProfile, int, error)
	// ProfileDetail returns userID's profile and statistics; ENOTFOUND when
	// the user has neither a profile nor documents.
	ProfileDetail(ctx context.Context, userID string) (*ProfileDetail, error)
	// PutProfile creates or updates userID's profile (created reports
	// which). Creating one writes user.signup (source "admin") and a tier
	// change user.plan_changed {user_id, old_tier, new_tier} to the outbox
	// in the same transaction. Values are checked by the caller.
	PutProfile(ctx context.Context, userID string, u ProfileUpdate) (p *UserProfile, created bool, err error)
	// DeleteProfile removes userID's profile (documents are kept);
	// ENOTFOUND without one.
	DeleteProfile(ctx context.Context, userID string) error
	// ReportPaymentIssue writes user.payment_issue {user_id, issue} to the
	// outbox and returns the profile; ENOTFOUND without one.
	ReportPaymentIssue(ctx context.Context, userID, issue string) (*UserProfile, error)
	// SearchUsers returns up to limit user ids containing q
	// (case-insensitive) in their id, display name, or local account's
	// e-mail or username, by user id.
	SearchUsers(ctx context.Context, q string, limit int) ([]string, error)
	// Mentionable returns the non-blocked profiles, by display name, at
	// most MentionableMax.
	Mentionable(ctx context.Context) ([]Mentionable, error)
}

// ValidLanguage reports whether l is one of ProfileLanguages.
func ValidLanguage(l string) bool {
	for _, x := range ProfileLanguages {
		if x == l {
			return true
		}
	}
	return false
}
