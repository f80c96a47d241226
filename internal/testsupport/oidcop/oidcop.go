// Package oidcop runs a real OpenID Connect provider on 127.0.0.1 for
// tests: zitadel/oidc's example provider (exampleop, an OpenID-certified
// library behind a username-and-password form), with our own users, one
// web client, and a groups claim in the ID token and the user info. The
// users' claims can be crafted (an unverified address, no email_verified
// at all, any address or group) and changed while it runs (SetGroups,
// AddUser), and a user can be refused (Disable): no more sign-in, and its
// refresh tokens answer invalid_grant. Refresh tokens are issued when the
// client asks for offline_access, and rotated at each use.
package oidcop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// User is an account of the provider.
type User struct {
	// ID is the subject (sub) of the user's tokens.
	ID                 string
	Username, Password string
	// Name is split at its first space into given and family names.
	GivenName, FamilyName string
	Email                 string
	EmailVerified         bool
	// NoEmailVerified sends no email_verified claim at all (as Entra ID
	// and some self-hosted providers do), whatever EmailVerified says.
	NoEmailVerified bool
	// Groups is sent as the groups claim (absent when empty).
	Groups []string
	// Picture is sent as the picture claim (absent when empty).
	Picture string
}

// Config shapes a provider.
type Config struct {
	ClientID, ClientSecret string
	// RedirectURIs are the client's registered callbacks.
	RedirectURIs []string
	Users        []User
	// ClaimsInIDToken puts the profile and e-mail claims in the ID token
	// too; by default (as the example client does) they are only at the
	// user info endpoint.
	ClaimsInIDToken bool
}

// Provider is a running provider.
type Provider struct {
	// Issuer is the issuer URL, http://127.0.0.1:PORT/ (trailing slash
	// included: clients must use exactly this string).
	Issuer string

	srv      *http.Server
	done     chan struct{}
	once     sync.Once
	userInfo atomic.Int64
	refresh  atomic.Int64
	users    *userStore
}

// RefreshCalls counts the refresh token grants asked of the token
// endpoint.
func (p *Provider) RefreshCalls() int64 { return p.refresh.Load() }

// AddUser adds u, or replaces the user with its ID.
func (p *Provider) AddUser(u User) { p.users.put(u) }

// SetGroups changes the groups of the user with subject id.
func (p *Provider) SetGroups(id string, groups ...string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	p.users.groups[id] = groups
}

// Disable refuses the user with subject id from now on: its sign-ins fail
// and its refresh tokens are invalid_grant.
func (p *Provider) Disable(id string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	p.users.disabled[id] = true
}

// UserInfoCalls counts the requests to the user info endpoint.
func (p *Provider) UserInfoCalls() int64 { return p.userInfo.Load() }

// Start runs a provider on a free loopback port.
func Start(cfg Config) (*Provider, error) {
	if cfg.ClientID == "" || len(cfg.RedirectURIs) == 0 {
		return nil, errors.New("oidcop: a client id and a redirect URI are required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	issuer := fmt.Sprintf("http://%s/", ln.Addr())
	users := &userStore{byID: map[string]*storage.User{}, groups: map[string][]string{}, noVerified: map[string]bool{},
		disabled: map[string]bool{}}
	for _, u := range cfg.Users {
		users.put(u)
	}
	// NOTE: a client map of its own: storage.NewStorage shares a
	// package-wide one between providers.
	clients := map[string]*storage.Client{cfg.ClientID: storage.WebClient(cfg.ClientID, cfg.ClientSecret, cfg.RedirectURIs...)}
	st := &groupsStorage{Storage: storage.NewStorageWithClients(users, clients), users: users, claimsInIDToken: cfg.ClaimsInIDToken}
	// A nil logger leaves the process's default logger alone.
	router := exampleop.SetupServer(issuer, st, nil, false)
	p := &Provider{Issuer: issuer, done: make(chan struct{}), users: users}
	p.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/userinfo" {
			p.userInfo.Add(1)
		}
		if r.URL.Path == "/oauth/token" && r.Method == http.MethodPost && r.ParseForm() == nil && r.PostForm.Get("grant_type") == "refresh_token" {
			p.refresh.Add(1)
		}
		router.ServeHTTP(w, r)
	})}
	go func() {
		defer close(p.done)
		p.srv.Serve(ln) //nolint:errcheck // ends with Close
	}()
	return p, nil
}

// Close stops the provider: from then on it cannot be reached.
func (p *Provider) Close() {
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		p.srv.Shutdown(ctx) //nolint:errcheck
		p.srv.Close()       //nolint:errcheck
		<-p.done
	})
}

type userStore struct {
	mu         sync.Mutex
	byID       map[string]*storage.User
	groups     map[string][]string
	noVerified map[string]bool
	disabled   map[string]bool
	pictures   map[string]string
}

func (u *userStore) put(x User) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.byID[x.ID] = &storage.User{ID: x.ID, Username: x.Username, Password: x.Password, FirstName: x.GivenName,
		LastName: x.FamilyName, Email: x.Email, EmailVerified: x.EmailVerified}
	u.groups[x.ID] = x.Groups
	u.noVerified[x.ID] = x.NoEmailVerified
	if u.pictures == nil {
		u.pictures = map[string]string{}
	}
	u.pictures[x.ID] = x.Picture
	delete(u.disabled, x.ID)
}

func (u *userStore) GetUserByID(id string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.disabled[id] {
		return nil
	}
	return u.byID[id]
}

func (u *userStore) GetUserByUsername(name string) *storage.User {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, x := range u.byID {
		if x.Username == name && !u.disabled[x.ID] {
			return x
		}
	}
	return nil
}

func (u *userStore) ExampleClientID() string { return storage.ServiceUserID }

// claims returns the groups of subject and whether to leave out
// email_verified.
func (u *userStore) claims(subject string) ([]string, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.groups[subject], u.noVerified[subject]
}

func (u *userStore) picture(subject string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.pictures[subject]
}

func (u *userStore) isDisabled(subject string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.disabled[subject]
}

// groupsStorage is the example storage with a groups claim and an
// explicit email_verified false.
type groupsStorage struct {
	*storage.Storage
	users           *userStore
	claimsInIDToken bool
}

// TokenRequestByRefreshToken refuses the refresh tokens of a disabled
// user (the provider answers invalid_grant).
func (s *groupsStorage) TokenRequestByRefreshToken(ctx context.Context, refreshToken string) (op.RefreshTokenRequest, error) {
	r, err := s.Storage.TokenRequestByRefreshToken(ctx, refreshToken)
	if err != nil {
		return nil, err
	}
	if s.users.isDisabled(r.GetSubject()) {
		return nil, errors.New("user disabled")
	}
	return r, nil
}

// GetClientByClientID returns the client, asserting the user info claims
// in the ID token when claimsInIDToken is set.
func (s *groupsStorage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil || !s.claimsInIDToken {
		return c, err
	}
	return idTokenClaims{c}, nil
}

type idTokenClaims struct{ op.Client }

func (idTokenClaims) IDTokenUserinfoClaimsAssertion() bool { return true }

// SetUserinfoFromRequest makes the claims of the ID token.
func (s *groupsStorage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, r op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, r, scopes); err != nil {
		return err
	}
	s.addClaims(ui, r.GetSubject())
	return nil
}

// SetUserinfoFromToken makes the answer of the user info endpoint.
func (s *groupsStorage) SetUserinfoFromToken(ctx context.Context, ui *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, ui, tokenID, subject, origin); err != nil {
		return err
	}
	s.addClaims(ui, ui.Subject)
	return nil
}

// addClaims adds the groups claim and, for an address that is not
// verified, email_verified false, which the example leaves out; for a
// user with NoEmailVerified, no email_verified at all.
func (s *groupsStorage) addClaims(ui *oidc.UserInfo, subject string) {
	groups, noVerified := s.users.claims(subject)
	if len(groups) > 0 {
		ui.AppendClaims("groups", groups)
	}
	if pic := s.users.picture(subject); pic != "" {
		ui.Picture = pic
	}
	if noVerified {
		ui.EmailVerified = false
		return
	}
	if ui.Email != "" && !bool(ui.EmailVerified) {
		ui.AppendClaims("email_verified", false)
	}
}
