package docflow

import (
	"context"
	"time"
)

// This file holds the records and store interfaces of the people who use
// docflow: the audit log, the user events, and the stores that later parts
// (local accounts, profiles, sharing, comments, annotations) implement.

// Subscription tiers of a user profile (decisions.md, Users and sign-in).
const (
	TierFree         = "free"
	TierStarter      = "starter"
	TierProfessional = "professional"
	TierPower        = "power"
)

// SubscriptionTiers lists the tiers from the smallest.
var SubscriptionTiers = []string{TierFree, TierStarter, TierProfessional, TierPower}

// ValidTier reports whether t is one of SubscriptionTiers.
func ValidTier(t string) bool {
	for _, x := range SubscriptionTiers {
		if x == t {
			return true
		}
	}
	return false
}

// EventEncoder builds the outbox message that announces a domain event
// (one of EventNames) about ownerID with data, at at. Stores that must
// write an event in the transaction of the change it announces are handed
// one (streams.EncodeEvent), since storage builds no messages itself.
type EventEncoder func(name string, ownerID *string, data map[string]any, at time.Time) (OutboxMessage, error)

// Audit actions. Every admin action on users, every share change and
// every sign-in is recorded under one of these names.
const (
	AuditLoginSucceeded   = "login.succeeded"
	AuditLoginFailed      = "login.failed"
	AuditSSOSucceeded     = "sso.succeeded"
	AuditSSOFailed        = "sso.failed"
	AuditPasswordReset    = "password.reset"
	AuditLocalUserCreate  = "local_user.create"
	AuditLocalUserUpdate  = "local_user.update"
	AuditLocalUserDelete  = "local_user.delete"
	AuditLocalUserSetPass = "local_user.set_password"
	AuditLocalUserReset   = "local_user.send_password_reset"
	AuditProfileUpdate    = "profile.update"
	AuditProfileDelete    = "profile.delete"
	AuditPaymentIssue     = "profile.payment_issue"
	AuditShareCreate      = "share.create"
	AuditShareUpdate      = "share.update"
	AuditShareDelete      = "share.delete"
)

// AuditEntry is one line of the audit log. Actor is the user id that
// acted ("" for an anonymous request, or the user name tried by a failed
// sign-in); Target what it acted on ("user:<id>", "local_user:<id>",
// "file:<id>", "share:<id>").
type AuditEntry struct {
	ID       int64     `json:"id"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Action   string    `json:"action"`
	Target   string    `json:"target"`
	Detail   string    `json:"detail"`
	ClientIP string    `json:"client_ip"`
}

// AuditFilter selects audit entries; zero fields select everything.
// Page counts from 1.
type AuditFilter struct {
	Actor    string
	Action   string
	From, To *time.Time
	Page     int
	PerPage  int
}

// AuditLog records and lists audit entries.
type AuditLog interface {
	// RecordAudit appends e (ID and, when zero, At are set by the store).
	RecordAudit(ctx context.Context, e AuditEntry) error
	// ListAudit returns the page of entries f selects, newest first, and
	// how many there are in all.
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, int, error)
}

// Signups creates the profile of a user seen for the first time.
type Signups interface {
	// EnsureProfile creates userID's profile when it has none, with
	// displayName, and then writes user.signup {user_id, display_name,
	// source} to the outbox in the same transaction; it reports whether
	// it created one. source says how the user came: "local" (an admin
	// created the account) or "sso" (first sign-in).
	EnsureProfile(ctx context.Context, userID, displayName, source string) (created bool, err error)
}
