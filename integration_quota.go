package docflow

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Unlimited is a quota without a maximum.
const Unlimited = -1

// IntegrationQuota is how many active integrations of each direction an
// owner may have (interface.md, Limits): storage destinations and IMAP
// sources (every source type counts as one).
type IntegrationQuota struct {
	Destinations int
	Sources      int
}

// integrationQuotas are the active integrations each subscription tier
// may have (docs/api.md, "Integrations").
var integrationQuotas = map[string]IntegrationQuota{
	TierFree:         {Destinations: 1, Sources: 0},
	TierStarter:      {Destinations: 2, Sources: 1},
	TierProfessional: {Destinations: 5, Sources: 3},
	TierPower:        {Destinations: 10, Sources: Unlimited},
}

// IntegrationQuotaFor returns the quota of a subscription tier; an unknown
// or empty tier is free. Exempt owners (administrators, the single user
// when AUTH_ENABLED is false) are not asked: they have no quota.
func IntegrationQuotaFor(tier string) IntegrationQuota {
	if q, ok := integrationQuotas[strings.ToLower(strings.TrimSpace(tier))]; ok {
		return q
	}
	return integrationQuotas[TierFree]
}

// Max returns the limit for direction.
func (q IntegrationQuota) Max(direction string) int {
	if direction == DirectionSource {
		return q.Sources
	}
	return q.Destinations
}

// Allows reports whether an owner with used active integrations of
// direction may add one more.
func (q IntegrationQuota) Allows(direction string, used int) bool {
	m := q.Max(direction)
	return m == Unlimited || used < m
}

// TierName is the display name of a tier ("Free", "Power").
func TierName(tier string) string {
	if tier == "" {
		return ""
	}
	return strings.ToUpper(tier[:1]) + tier[1:]
}

// QuotaDetail is the 403 detail when a create or a re-activation would
// exceed the owner's quota (interface.md, Errors: "plan limit reached,
// remove a destination or upgrade"; the source wording names the source).
func QuotaDetail(direction string) string {
	if direction == DirectionSource {
		return "plan limit reached, remove an IMAP source or upgrade"
	}
	return "plan limit reached, remove a destination or upgrade"
}

// ErrIntegrationQuota is the EFORBIDDEN error of QuotaDetail.
func ErrIntegrationQuota(direction string) *Error {
	return Errorf(EFORBIDDEN, "%s", QuotaDetail(direction))
}

// IntegrationTesters maps an integration type (upper case) to its tester.
// internal/app builds it once; each package that supports a type adds its
// tester there.
type IntegrationTesters map[string]IntegrationTester

// Test runs the tester registered for in's type; a type without one
// answers success false and says testing it is not supported yet.
func (t IntegrationTesters) Test(ctx context.Context, in *Integration) (bool, string) {
	if tt, ok := t[in.IntegrationType]; ok && tt != nil {
		return tt.TestIntegration(ctx, in)
	}
	return false, fmt.Sprintf("testing %s is not supported yet", in.IntegrationType)
}

// IntegrationFilter narrows a listing of one owner's integrations; empty
// fields do not filter.
type IntegrationFilter struct {
	Direction       string
	IntegrationType string
}

// IntegrationUsage is an owner's tier and active integrations per
// direction, as the quota counts them.
type IntegrationUsage struct {
	Tier         string
	Destinations int
	Sources      int
}

// Used returns the count for direction.
func (u IntegrationUsage) Used(direction string) int {
	if direction == DirectionSource {
		return u.Sources
	}
	return u.Destinations
}

// IntegrationStatusUpdate is what the process running an integration
// reports: nil fields keep their value, counters are added to the stored
// ones (so a restart does not reset them).
type IntegrationStatusUpdate struct {
	State      *string
	LastPollAt *time.Time
	// UsedAt sets last_used_at (a poll that ingested or a delivery that
	// succeeded).
	UsedAt *time.Time
	// Error sets last_error when not nil; a pointer to "" clears it.
	Error             *string
	MessagesSeen      int64
	DocumentsIngested int64
	DeliveriesOK      int64
	DeliveriesFailed  int64
}

// IntegrationStateIdle is the status state of an integration no process
// has reported on yet.
const IntegrationStateIdle = "idle"
