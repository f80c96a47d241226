// Package oidcop runs a real OpenID Connect provider on 127.0.0.1 for
// tests: zitadel/oidc's example provider (exampleop, an OpenID-certified
// library behind a username-and-password form), with our own users, one
// web client, and a groups claim in the ID token and the user info.
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
	// Groups is sent as the groups claim (absent when empty).
	Groups []string
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
	users := userStore{byID: map[string]*storage.User{}, groups: map[string][]string{}}
	for _, u := range cfg.Users {
		users.byID[u.ID] = &storage.User{ID: u.ID, Username: u.Username, Password: u.Password, FirstName: u.GivenName,
			LastName: u.FamilyName, Email: u.Email, EmailVerified: u.EmailVerified}
		users.groups[u.ID] = u.Groups
	}
	// NOTE: a client map of its own: storage.NewStorage shares a
	// package-wide one between providers.
	clients := map[string]*storage.Client{cfg.ClientID: storage.WebClient(cfg.ClientID, cfg.ClientSecret, cfg.RedirectURIs...)}
	st := &groupsStorage{Storage: storage.NewStorageWithClients(users, clients), users: users, claimsInIDToken: cfg.ClaimsInIDToken}
	// A nil logger leaves the process's default logger alone.
	router := exampleop.SetupServer(issuer, st, nil, false)
	p := &Provider{Issuer: issuer, done: make(chan struct{})}
	p.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/userinfo" {
			p.userInfo.Add(1)
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
	byID   map[string]*storage.User
	groups map[string][]string
}

func (u userStore) GetUserByID(id string) *storage.User { return u.byID[id] }

func (u userStore) GetUserByUsername(name string) *storage.User {
	for _, x := range u.byID {
		if x.Username == name {
			return x
		}
	}
	return nil
}

func (u userStore) ExampleClientID() string { return storage.ServiceUserID }

// groupsStorage is the example storage with a groups claim and an
// explicit email_verified false.
type groupsStorage struct {
	*storage.Storage
	users           userStore
	claimsInIDToken bool
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
// verified, email_verified false, which the example leaves out (as most
// providers do not).
func (s *groupsStorage) addClaims(ui *oidc.UserInfo, subject string) {
	if g := s.users.groups[subject]; len(g) > 0 {
		ui.AppendClaims("groups", g)
	}
	if ui.Email != "" && !bool(ui.EmailVerified) {
		ui.AppendClaims("email_verified", false)
	}
}
