package httpdest

import (
	"context"
	"errors"
	"net/http"

	"docflow"
)

// Doer sends requests with an access token: Tokens (refreshed once on a
// 401) or a StaticToken.
type Doer interface {
	Do(ctx context.Context, build func(ctx context.Context, token string) (*http.Request, error)) (*http.Response, error)
}

var (
	_ Doer = (*Tokens)(nil)
	_ Doer = StaticToken{}
)

// StaticToken sends requests with an access token it was given (the cloud
// folder browser's): nothing to refresh, a 401 is the answer.
type StaticToken struct {
	Service string
	HTTP    *http.Client
	Token   string
}

// Do implements Doer.
func (s StaticToken) Do(ctx context.Context, build func(context.Context, string) (*http.Request, error)) (*http.Response, error) {
	req, err := build(ctx, s.Token)
	if err != nil {
		return nil, err
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return nil, Transport(s.Service, err)
	}
	return resp, nil
}

// BrowseError turns a failure of the cloud folder browser into the API's
// error: a refused token, a forbidden or invalid request 400, a missing
// folder 404 (notFound, as the provider's client decided), rate limited
// 429 with its wait, anything else 502, with the reason as detail.
func BrowseError(err error, notFound bool) error {
	var de *docflow.DestinationError
	if !errors.As(err, &de) {
		return err
	}
	if notFound {
		return docflow.Errorf(docflow.ENOTFOUND, "%s", de.Error())
	}
	switch de.Class {
	case docflow.DestAuth, docflow.DestForbidden, docflow.DestInvalid, docflow.DestFull:
		return docflow.Errorf(docflow.EBADREQUEST, "%s", de.Error())
	case docflow.DestRateLimited:
		e := docflow.Errorf(docflow.ERATELIMIT, "%s", de.Error())
		e.RetryAfter = max(1, int(de.RetryAfter.Seconds()))
		return e
	}
	return docflow.Errorf(docflow.EBADGATEWAY, "%s", de.Error())
}
