package httpdest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"docflow"
)

// Tokens holds an OAuth client's access token, got from its refresh token
// (the refresh_token grant, through golang.org/x/oauth2) when there is
// none or it expired. It is safe for concurrent use.
type Tokens struct {
	service string
	cfg     oauth2.Config
	client  *http.Client
	// onRotate receives a new refresh token when the provider rotates it.
	onRotate func(string)

	mu      sync.Mutex
	refresh string
	tok     *oauth2.Token
}

// TokenOptions configure NewTokens.
type TokenOptions struct {
	// Service names the provider in errors ("Dropbox").
	Service      string
	TokenURL     string
	ClientID     string
	ClientSecret string
	RefreshToken string
	// HTTP makes the token requests (the guarded client).
	HTTP *http.Client
	// OnRotate, when set, receives a refresh token the provider issued in
	// place of the one given (Microsoft rotates them), so it can be kept.
	OnRotate func(refreshToken string)
}

// NewTokens returns the token source of one integration.
func NewTokens(o TokenOptions) *Tokens {
	return &Tokens{
		service: o.Service,
		cfg: oauth2.Config{
			ClientID:     o.ClientID,
			ClientSecret: o.ClientSecret,
			// NOTE: every provider here takes the client's credentials in
			// the form; naming the style spares x/oauth2's second attempt.
			Endpoint: oauth2.Endpoint{TokenURL: o.TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		},
		client:   o.HTTP,
		onRotate: o.OnRotate,
		refresh:  o.RefreshToken,
	}
}

// Token returns a valid access token, refreshing it when there is none or
// it has expired. A refresh the provider refuses is DestAuth with its
// error code ("invalid_grant"); 429 is DestRateLimited; no answer or a
// server error is DestUnavailable.
func (t *Tokens) Token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tok.Valid() {
		return t.tok.AccessToken, nil
	}
	return t.refreshLocked(ctx)
}

// Refresh forgets the access token and gets a new one.
func (t *Tokens) Refresh(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tok = nil
	return t.refreshLocked(ctx)
}

func (t *Tokens) refreshLocked(ctx context.Context) (string, error) {
	if t.client != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, t.client)
	}
	tok, err := t.cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: t.refresh}).Token()
	if err != nil {
		return "", t.refreshError(err)
	}
	t.tok = tok
	if tok.RefreshToken != "" && tok.RefreshToken != t.refresh {
		t.refresh = tok.RefreshToken
		if t.onRotate != nil {
			t.onRotate(tok.RefreshToken)
		}
	}
	return tok.AccessToken, nil
}

func (t *Tokens) refreshError(err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		return Transport(t.service, err)
	}
	a := Answer{Status: re.Response.StatusCode, Code: re.ErrorCode, RetryAfter: RetryAfter(re.Response.Header, time.Now())}
	var class docflow.DestinationFailure
	switch re.ErrorCode {
	case "invalid_grant", "invalid_client", "unauthorized_client", "invalid_request", "invalid_scope":
		class = docflow.DestAuth
	}
	e := Fail(t.service, a, class)
	e.Reason = fmt.Sprintf("%s token endpoint answered HTTP %d", t.service, a.Status)
	if a.Code != "" {
		e.Reason += " (" + a.Code + ")"
	}
	e.Err = err
	return e
}

// Do sends the request build makes with the access token; when the API
// answers 401 it refreshes the token once and sends a request built anew
// (so build must give a body that can be sent again). The caller reads
// and closes the response; a request that got no answer is
// DestUnavailable.
func (t *Tokens) Do(ctx context.Context, build func(ctx context.Context, token string) (*http.Request, error)) (*http.Response, error) {
	tok, err := t.Token(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := t.send(ctx, build, tok)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	Drain(resp)
	if tok, err = t.Refresh(ctx); err != nil {
		return nil, err
	}
	return t.send(ctx, build, tok)
}

func (t *Tokens) send(ctx context.Context, build func(context.Context, string) (*http.Request, error), tok string) (*http.Response, error) {
	req, err := build(ctx, tok)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, Transport(t.service, err)
	}
	return resp, nil
}
