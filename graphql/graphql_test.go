package graphql_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/graphql"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
	"docflow/streams"
)

// These tests run the executor over the real stores on a throwaway
// database; the whole HTTP path, a client library and the mutations are
// tested in e2e/api (graphql_app_test.go).

// statementCounter counts the statements sent to PostgreSQL.
type statementCounter struct{ n atomic.Int64 }

func (s *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	s.n.Add(1)
	return ctx
}

func (s *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// env is an executor over a seeded database whose statements are counted.
type env struct {
	t       testing.TB
	db      *postgres.DB
	counter *statementCounter
	api     *graphql.API
	files   *postgres.FileStore
}

// noWrites refuses every mutation: this package's tests read only.
type noWrites struct{}

func (noWrites) EditMetadata(context.Context, int64, map[string]any) (*docflow.File, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no writes here")
}
func (noWrites) Reprocess(context.Context, int64) (string, error) {
	return "", docflow.Errorf(docflow.ENOTIMPL, "no writes here")
}
func (noWrites) Share(context.Context, int64, string, string) (*docflow.Share, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no writes here")
}
func (noWrites) Comment(context.Context, int64, string, *int64) (*docflow.Comment, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no writes here")
}
func (noWrites) Delete(context.Context, int64) error {
	return docflow.Errorf(docflow.ENOTIMPL, "no writes here")
}

// newEnv seeds n files, the first owned by ann and the rest by bob, with
// two comments (one a reply) on each; vars are the environment settings.
func newEnv(t testing.TB, n int, vars map[string]string) *env {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "gql")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	if err := db.SeedFiles(ctx, n); err != nil {
		t.Fatal(err)
	}
	files := postgres.NewFileStore(db)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	if _, err := files.AssignOwner(ctx, "ann@example.com", ids[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := files.AssignOwner(ctx, "bob@example.com", ids[1:]); err != nil {
		t.Fatal(err)
	}
	comments := postgres.NewCommentStore(db)
	for _, id := range ids {
		top := &docflow.Comment{FileID: id, UserID: "bob@example.com", Body: fmt.Sprintf("first on %d", id)}
		if _, err := comments.CreateComment(ctx, top, nil); err != nil {
			t.Fatal(err)
		}
		reply := &docflow.Comment{FileID: id, UserID: "bob@example.com", ParentID: &top.ID, Body: "a reply"}
		if _, err := comments.CreateComment(ctx, reply, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := postgres.NewShareStore(db).PutShare(ctx, 2, "bob@example.com", "ann@example.com", docflow.RoleViewer); err != nil {
		t.Fatal(err)
	}

	// The counted pool: the executor's stores read through it alone.
	counter := &statementCounter{}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = counter
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	traced := &postgres.DB{Pool: pool, URL: db.URL, Now: time.Now}

	cipher, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	settings, err := postgres.NewSettingsStore(ctx, db, cipher, func(k string) string { return vars[k] }, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	index, err := searchbleve.Open(t.TempDir(), searchbleve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { index.Close() })
	tracedFiles := postgres.NewFileStore(traced)
	api, err := graphql.New(graphql.Deps{Settings: settings, Files: tracedFiles, Comments: postgres.NewCommentStore(traced),
		Shares: postgres.NewShareStore(traced), Pipelines: postgres.NewPipelineStore(traced),
		Profiles: postgres.NewProfileStore(traced, streams.EncodeEvent), Index: index, Search: postgres.NewSearchStore(traced), Writes: noWrites{}})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, db: db, counter: counter, api: api, files: tracedFiles}
}

var (
	admin = &docflow.User{ID: "admin", IsAdmin: true}
	ann   = &docflow.User{ID: "ann@example.com"}
)

// result is a response as a client reads it.
type result struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

// run executes query for u and returns the response and the statements
// it sent.
func (e *env) run(u *docflow.User, query string, vars map[string]any) (result, int64) {
	e.t.Helper()
	before := e.counter.n.Load()
	resp := e.api.Execute(context.Background(), u, graphql.Request{Query: query, Variables: vars})
	n := e.counter.n.Load() - before
	b, err := json.Marshal(resp)
	if err != nil {
		e.t.Fatal(err)
	}
	var r result
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("decode %s: %v", b, err)
	}
	return r, n
}

func listLen(t *testing.T, r result, field string) int {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(r.Data[field], &items); err != nil {
		t.Fatalf("%s: %v (errors %v)", field, err, r.Errors)
	}
	return len(items)
}

// A list of documents with their comments, shares, logs and statuses
// runs one statement for the list and one per kind of thing asked,
// however many documents there are.
func TestDocumentsLoadWhatTheyAskInBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 120, nil)
	const q = `query($n: Int) { documents(limit: $n) { id originalFilename
		comments { id body replies { id body } } shares { role } logs { stepName } processingStatus { status } } }`
	small, n10 := e.run(admin, q, map[string]any{"n": 10})
	big, n100 := e.run(admin, q, map[string]any{"n": 100})
	if len(small.Errors)+len(big.Errors) > 0 {
		t.Fatalf("errors: %v %v", small.Errors, big.Errors)
	}
	if got := listLen(t, big, "documents"); got != 100 {
		t.Fatalf("documents(limit: 100) returned %d", got)
	}
	// The list (and its total), comments, shares, logs, statuses.
	if n100 > 6 || n100 != n10 {
		t.Fatalf("100 documents ran %d statements, 10 ran %d: want the same few (at most 6)", n100, n10)
	}
	var docs []struct {
		ID       int
		Comments []struct {
			Body    string
			Replies []struct{ Body string }
		}
	}
	if err := json.Unmarshal(big.Data["documents"], &docs); err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if len(d.Comments) != 1 || len(d.Comments[0].Replies) != 1 || d.Comments[0].Body != fmt.Sprintf("first on %d", d.ID) {
			t.Fatalf("document %d comments %+v: want its one thread with its reply", d.ID, d.Comments)
		}
	}
}

// Queries over the limits are refused without running; a request for
// more documents than the cap gets the cap.
func TestLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 210, nil)

	deep := "{ documents(limit: 1) { comments { " + strings.Repeat("replies { ", 98) + "id" + strings.Repeat(" }", 98) + " } } }"
	r, n := e.run(admin, deep, nil)
	if len(r.Errors) == 0 || r.Data["documents"] != nil || n != 0 {
		t.Fatalf("100 levels deep: errors %v, data %s, %d statements: want refused, not run", r.Errors, r.Data, n)
	}

	r, _ = e.run(admin, `{ documents(limit: 10000) { id } }`, nil)
	if len(r.Errors) > 0 || listLen(t, r, "documents") != graphql.MaxDocuments {
		t.Fatalf("documents(limit: 10000): errors %v: want %d documents", r.Errors, graphql.MaxDocuments)
	}

	wide := `{ documents(limit: 200) { ` + strings.Repeat("id originalFilename ", 1) +
		`comments { id body mentions userId isResolved createdAt updatedAt parentId fileId replies { id body userId createdAt } }
		logs { id stepName status message timestamp taskId } } }`
	r, n = e.run(admin, wide, nil)
	if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != "QUERY_TOO_COMPLEX" || n != 0 {
		t.Fatalf("a costly query: errors %v, %d statements: want QUERY_TOO_COMPLEX, not run", r.Errors, n)
	}

	// 5,000 copies of one field: cheap by cost, but 12.5 million pairs
	// for validation to compare; refused at MaxOverlapPairs, in moments
	// rather than minutes.
	start := time.Now()
	r, n = e.run(admin, "{ "+strings.Repeat("__typename ", 5000)+"}", nil)
	if len(r.Errors) == 0 || n != 0 || time.Since(start) > 20*time.Second {
		t.Fatalf("5,000 copies of a field: errors %v, %d statements, %v", r.Errors, n, time.Since(start))
	}

	r, n = e.run(admin, `{ documents { id noSuchField } }`, nil)
	if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, "noSuchField") || n != 0 {
		t.Fatalf("an unknown field: errors %v, %d statements: want an error naming it", r.Errors, n)
	}
}

// The spec's auth rules: administrators' fields refused to others,
// documents filtered by the file access rule, sensitive settings never
// listed.
func TestAuthRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 5, map[string]string{"MULTI_USER_ENABLED": "true", "AUTH_ENABLED": "true"})

	for _, q := range []string{`{ settings { key } }`, `{ users { userId } }`, `{ user(userId: "bob@example.com") { userId } }`} {
		r, _ := e.run(ann, q, nil)
		if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != docflow.EFORBIDDEN {
			t.Errorf("%s as a user: errors %v: want forbidden", q, r.Errors)
		}
	}

	// ann owns file 1 and has a viewer share of file 2.
	r, _ := e.run(ann, `{ documents(limit: 50) { id shares { id } } }`, nil)
	var docs []struct {
		ID     int
		Shares *[]struct{ ID int }
	}
	if err := json.Unmarshal(r.Data["documents"], &docs); err != nil {
		t.Fatalf("documents: %v (errors %v)", err, r.Errors)
	}
	if len(docs) != 2 || docs[0].ID != 2 || docs[1].ID != 1 {
		t.Fatalf("ann sees %+v: want files 2 and 1", docs)
	}
	if docs[0].Shares != nil || docs[1].Shares == nil || len(r.Errors) != 1 {
		t.Fatalf("shares: %+v, errors %v: want null with an error on the shared file, a list on her own", docs, r.Errors)
	}
	r, _ = e.run(ann, `{ document(id: 3) { id } }`, nil)
	if len(r.Errors) == 0 || r.Errors[0].Extensions["code"] != docflow.EFORBIDDEN {
		t.Fatalf("another's document: errors %v: want forbidden", r.Errors)
	}
	r, _ = e.run(ann, `{ documents(ownerId: "bob@example.com") { id } }`, nil)
	if got := listLen(t, r, "documents"); got != 1 {
		t.Fatalf("ann's view of bob's documents: %d, want the one shared with her", got)
	}

	r, _ = e.run(admin, `{ settings(limit: 1000) { key } users { userId } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("admin: %v", r.Errors)
	}
	var settings []struct{ Key string }
	if err := json.Unmarshal(r.Data["settings"], &settings); err != nil {
		t.Fatal(err)
	}
	sensitive := map[string]bool{}
	for _, d := range docflow.Catalogue() {
		if d.Sensitive {
			sensitive[d.Key] = true
		}
	}
	if len(settings) == 0 || len(sensitive) == 0 {
		t.Fatalf("%d settings, %d sensitive in the catalogue", len(settings), len(sensitive))
	}
	for _, s := range settings {
		if sensitive[s.Key] {
			t.Errorf("settings lists the sensitive %s", s.Key)
		}
	}
}
