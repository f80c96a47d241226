package app

import "context"

// SSOUserState exposes ssoUserState to the tests of package app_test.
func (m *App) SSOUserState(ctx context.Context, userID string) (known, active, admin bool, err error) {
	return m.ssoUserState(ctx, userID)
}
