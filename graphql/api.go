package graphql

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sync"

	gqlgo "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"

	"docflow"
)

// schemaText is the schema, the API's source of truth: resolvers are
// checked against it when New parses it.
//
//go:embed schema.graphql
var schemaText string

// Schema returns the schema's text (schema.graphql).
func Schema() string { return schemaText }

// Limits of one request. A request over them is answered with an error
// and not run.
const (
	// MaxDepth is the deepest nesting of fields a query may have (the
	// standard introspection query, as GraphiQL sends it, reaches 14).
	MaxDepth = 20
	// MaxComplexity is the most a query may cost (complexity.go).
	MaxComplexity = 50_000
	// MaxQueryLength is the longest query text, in bytes.
	MaxQueryLength = 64 << 10
	// MaxDocuments caps documents' limit: a larger one returns this many.
	MaxDocuments = 200
	// MaxUsers caps users' limit, as the REST list's per_page.
	MaxUsers = 100
	// MaxOverlapPairs caps the pairs of fields with one response name
	// that validation compares (the library's OverlapValidationLimit):
	// 5,000 copies of one field, 55 KB and cheap by MaxComplexity, are
	// 12.5 million pairs, minutes of one core before the query is even
	// refused (found by FuzzExecute).
	MaxOverlapPairs = 100_000
)

// Deps are what the resolvers read and write through, each an interface
// this package declares (or the root package's).
type Deps struct {
	// Settings are read for the file access rule and listed by settings.
	Settings  docflow.SettingsStore
	Files     FileReader
	Comments  CommentLoader
	Shares    ShareLoader
	Pipelines PipelineReader
	Profiles  ProfileReader
	// Index and Search answer search and similar.
	Index  docflow.SearchIndex
	Search SearchReader
	// Writes make the mutations' changes by the REST API's code.
	Writes Writes
}

// API executes GraphQL requests.
type API struct {
	schema *gqlgo.Schema
	d      Deps
	// lists are arrays for lists of documents, reused (docList).
	lists sync.Pool
}

// New parses the schema and binds the resolvers to it; an error means the
// resolvers and schema.graphql disagree.
func New(d Deps) (*API, error) {
	if d.Settings == nil || d.Files == nil || d.Comments == nil || d.Shares == nil || d.Pipelines == nil ||
		d.Profiles == nil || d.Index == nil || d.Search == nil || d.Writes == nil {
		return nil, errors.New("graphql: New needs every dependency")
	}
	a := &API{d: d, lists: sync.Pool{New: func() any { return &docList{} }}}
	// UseFieldResolvers lets a resolver's exported field answer the schema
	// field of its name where the resolver has no method for it: the
	// plain fields of a Document (document.go).
	s, err := gqlgo.ParseSchema(schemaText, &rootResolver{a: a},
		gqlgo.UseStringDescriptions(), gqlgo.UseFieldResolvers(), gqlgo.MaxDepth(MaxDepth), gqlgo.MaxQueryLength(MaxQueryLength),
		gqlgo.MaxParallelism(4), gqlgo.OverlapValidationLimit(MaxOverlapPairs))
	if err != nil {
		return nil, fmt.Errorf("graphql schema: %w", err)
	}
	a.schema = s
	return a, nil
}

// Request is the body of POST /graphql.
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// Execute runs req for u (the authenticated user; in single-user mode the
// anonymous administrator). The answer is the GraphQL response, to be
// sent with status 200 whatever its errors: a query over the limits, a
// syntax error or an unknown field is an error in it, not run.
func (a *API) Execute(ctx context.Context, u *docflow.User, req Request) *gqlgo.Response {
	if len(req.Query) > MaxQueryLength {
		return errorResponse(fmt.Sprintf("The query is %d bytes long; at most %d are allowed", len(req.Query), MaxQueryLength), "QUERY_TOO_LONG")
	}
	if cost, ok := Complexity(req.Query, req.OperationName, req.Variables); ok && cost > MaxComplexity {
		return errorResponse(fmt.Sprintf("The query's complexity is %d; at most %d is allowed (ask for fewer documents or fewer nested lists)",
			cost, MaxComplexity), "QUERY_TOO_COMPLEX")
	}
	r := &request{user: u}
	resp := a.schema.Exec(context.WithValue(ctx, ctxKey{}, r), req.Query, req.OperationName, req.Variables)
	// The answer is written out: the lists' arrays serve the next request.
	for _, l := range r.lists {
		l.reset()
		a.lists.Put(l)
	}
	return resp
}

func errorResponse(msg, code string) *gqlgo.Response {
	return &gqlgo.Response{Errors: []*gqlerrors.QueryError{{Message: msg, Extensions: map[string]any{"code": code}}}}
}

type ctxKey struct{}

// request is what the resolvers of one request share: its user, and the
// arrays its lists of documents took (given back when it ends).
type request struct {
	user *docflow.User

	mu    sync.Mutex
	lists []*docList
}

// userOf returns the request's user (nil when there is none).
func userOf(ctx context.Context) *docflow.User {
	if r, _ := ctx.Value(ctxKey{}).(*request); r != nil {
		return r.user
	}
	return nil
}

// takeList returns arrays for a list of documents, to be given back when
// the request ends; outside a request (no Execute) new ones.
func (a *API) takeList(ctx context.Context) *docList {
	r, _ := ctx.Value(ctxKey{}).(*request)
	if r == nil {
		return &docList{}
	}
	l := a.lists.Get().(*docList)
	r.mu.Lock()
	r.lists = append(r.lists, l)
	r.mu.Unlock()
	return l
}

// access is the file access rule as the settings state it now.
func (a *API) access() docflow.FileAccess { return docflow.FileAccessFrom(a.d.Settings) }

// requireAdmin refuses anyone but an administrator (everyone is one in
// single-user mode), as the REST API's admin routes do.
func requireAdmin(ctx context.Context) error {
	u := userOf(ctx)
	if u == nil {
		return asGraphQLError(docflow.Errorf(docflow.EUNAUTHORIZED, "Not authenticated"))
	}
	if !u.IsAdmin {
		return asGraphQLError(docflow.Errorf(docflow.EFORBIDDEN, "Admin access required"))
	}
	return nil
}

// resolverError is a docflow error as a GraphQL error: its message, and
// its code (with the HTTP status the REST API would answer) in the
// error's extensions.
type resolverError struct {
	msg    string
	code   string
	fields []docflow.FieldError
}

func (e *resolverError) Error() string { return e.msg }

func (e *resolverError) Extensions() map[string]any {
	ext := map[string]any{"code": e.code}
	if len(e.fields) > 0 {
		ext["fields"] = e.fields
	}
	return ext
}

// asGraphQLError turns a docflow error into a resolver error; an
// internal one keeps its detail out of the answer.
func asGraphQLError(err error) error {
	if err == nil {
		return nil
	}
	code := docflow.ErrorCode(err)
	msg := docflow.ErrorMessage(err)
	if code == docflow.EINTERNAL {
		msg = "Internal error"
	}
	var de *docflow.Error
	var fields []docflow.FieldError
	if errors.As(err, &de) {
		fields = de.Fields
	}
	return &resolverError{msg: msg, code: code, fields: fields}
}
