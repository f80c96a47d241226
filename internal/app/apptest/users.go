package apptest

import (
	"context"
	"testing"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/passwd"
	"docflow/storage/postgres"
	"docflow/streams"
)

// LocalUser creates an active local account whose user id is email (an
// administrator when admin), with the password Password(email), and
// returns it. A token or a session works only for someone who may sign
// in, so a test acting as a user makes the user first.
func (a *App) LocalUser(t testing.TB, email string, admin bool) *docflow.LocalUser {
	t.Helper()
	accounts := postgres.NewAccountStore(a.DB, streams.EncodeEvent, passwd.Hasher{}, nil)
	u, err := accounts.CreateLocalUser(context.Background(), docflow.LocalUserInput{Email: email, Username: email,
		DisplayName: email, Password: Password(email), IsAdmin: admin})
	if err != nil {
		t.Fatalf("create local user %s: %v", email, err)
	}
	return u
}

// Password is the password LocalUser gives the account email.
func Password(email string) string { return "password of " + email }

// Token stores a new API token of owner (with no expiry) and returns it.
func (a *App) Token(t testing.TB, owner string) string {
	t.Helper()
	plain := dfhttp.NewToken()
	if err := postgres.NewTokenStore(a.DB).CreateToken(context.Background(), &docflow.APIToken{OwnerID: owner,
		Name: "test", TokenPrefix: plain[:12], TokenHash: dfhttp.HashToken(plain)}); err != nil {
		t.Fatalf("create token of %s: %v", owner, err)
	}
	return plain
}
