package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2/gqlerror"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/storage/postgres"
)

// GraphQL as `docflow api` serves it, through a client library: the
// spec's queries with their arguments, the auth rules, the mutations'
// rights (the REST routes' own), and what a browser's session may not do
// from another site.

type gqlEnv struct {
	a               *apptest.App
	admin, ann, bob *gqlClient
	annTok, bobTok  string
}

// newGQLEnv: AUTH_ENABLED and MULTI_USER_ENABLED; ann owns documents 1
// and 2, bob document 3.
func newGQLEnv(t *testing.T) *gqlEnv {
	t.Helper()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_USERNAME": "admin", "ADMIN_PASSWORD": "admin-password"}})
	ctx := context.Background()
	a.LocalUser(t, "ann@example.com", false)
	a.LocalUser(t, "bob@example.com", false)
	if err := a.DB.SeedFiles(ctx, 3); err != nil {
		t.Fatal(err)
	}
	files := postgres.NewFileStore(a.DB)
	if _, err := files.AssignOwner(ctx, "ann@example.com", []int64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := files.AssignOwner(ctx, "bob@example.com", []int64{3}); err != nil {
		t.Fatal(err)
	}
	e := &gqlEnv{a: a, annTok: a.Token(t, "ann@example.com"), bobTok: a.Token(t, "bob@example.com")}
	e.admin = newGQLClient(t, a.URL, a.Token(t, "admin"))
	e.ann = newGQLClient(t, a.URL, e.annTok)
	e.bob = newGQLClient(t, a.URL, e.bobTok)
	return e
}

// code is the docflow code of a GraphQL error ("" for none).
func code(err error) string {
	var list gqlerror.List
	if errors.As(err, &list) && len(list) > 0 {
		c, _ := list[0].Extensions["code"].(string)
		return c
	}
	return ""
}

func TestGraphQLSpecQueries(t *testing.T) {
	t.Parallel()
	e := newGQLEnv(t)

	var docs struct {
		Documents []struct {
			ID               int
			OriginalFilename string
			MimeType         string
			FileSize         float64
			DocumentTitle    *string
			CreatedAt        string
			IsDuplicate      bool
			OcrQualityScore  *float64
		}
	}
	q := `query($owner: String, $limit: Int, $offset: Int) { documents(ownerId: $owner, limit: $limit, offset: $offset) {
		id originalFilename mimeType fileSize documentTitle createdAt isDuplicate ocrQualityScore } }`
	if err := e.admin.do(q, map[string]any{"owner": "ann@example.com", "limit": 1, "offset": 1}, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs.Documents) != 1 || docs.Documents[0].ID != 1 || docs.Documents[0].OriginalFilename != "invoice-1.pdf" ||
		docs.Documents[0].MimeType != "application/pdf" || docs.Documents[0].FileSize != 100001 {
		t.Fatalf("ann's second document, newest first: %+v", docs.Documents)
	}

	var one struct {
		Document struct {
			ID               int
			ProcessingStatus struct{ Status string }
			Comments         []struct{ ID int }
			Logs             []struct{ StepName string }
			AiMetadata       any
		}
	}
	if err := e.ann.do(`query($id: Int!) { document(id: $id) { id processingStatus { status } comments { id } logs { stepName } aiMetadata } }`,
		map[string]any{"id": 2}, &one); err != nil || one.Document.ID != 2 {
		t.Fatalf("ann's document 2: %+v, %v", one, err)
	}
	if err := e.ann.do(`{ document(id: 3) { id } }`, nil, &one); code(err) != docflow.EFORBIDDEN {
		t.Fatalf("bob's document as ann: %v, want forbidden", err)
	}

	var pipes struct {
		Pipelines []struct {
			ID          int
			Name        string
			Description string
			IsDefault   bool
			IsActive    bool
			Steps       []struct {
				Position int
				StepType string
				Label    string
				Enabled  bool
			}
		}
	}
	if err := e.ann.do(`query($limit: Int, $offset: Int) { pipelines(limit: $limit, offset: $offset) {
		id name description isDefault isActive steps { position stepType label enabled } } }`,
		map[string]any{"limit": 10, "offset": 0}, &pipes); err != nil {
		t.Fatal(err)
	}
	if len(pipes.Pipelines) == 0 || len(pipes.Pipelines[0].Steps) == 0 {
		t.Fatalf("pipelines: %+v: want the system pipeline with its steps", pipes)
	}
	var pipe struct{ Pipeline struct{ ID int } }
	if err := e.ann.do(`query($id: Int!) { pipeline(id: $id) { id name } }`, map[string]any{"id": pipes.Pipelines[0].ID}, &pipe); err != nil ||
		pipe.Pipeline.ID != pipes.Pipelines[0].ID {
		t.Fatalf("pipeline: %+v %v", pipe, err)
	}

	var admin struct {
		Settings []struct {
			Key       string
			Value     string
			UpdatedAt *string
		}
		Users []struct {
			UserID           string
			DisplayName      *string
			SubscriptionTier string
			IsBlocked        bool
		}
		User struct{ UserID string }
	}
	if err := e.admin.do(`{ settings(limit: 500, offset: 0) { key value updatedAt }
		users(limit: 10, offset: 0) { userId displayName subscriptionTier isBlocked }
		user(userId: "ann@example.com") { userId } }`, nil, &admin); err != nil {
		t.Fatal(err)
	}
	if len(admin.Settings) == 0 || len(admin.Users) == 0 || admin.User.UserID != "ann@example.com" {
		t.Fatalf("admin queries: %d settings, users %+v, user %+v", len(admin.Settings), admin.Users, admin.User)
	}
	sensitive := map[string]bool{}
	for _, d := range docflow.Catalogue() {
		sensitive[d.Key] = d.Sensitive
	}
	for _, s := range admin.Settings {
		if sensitive[s.Key] {
			t.Errorf("settings lists the sensitive %s", s.Key)
		}
	}
	for _, q := range []string{`{ settings { key } }`, `{ users { userId } }`, `{ user(userId: "bob@example.com") { userId } }`} {
		var out map[string]any
		if err := e.ann.do(q, nil, &out); code(err) != docflow.EFORBIDDEN {
			t.Errorf("%s as ann: %v, want forbidden", q, err)
		}
	}

	// An unknown field is a GraphQL error in a 200 answer.
	c := newClient(t, e.a.URL)
	status, body := c.do("POST", "/graphql", map[string]string{"query": "{ documents { id noSuchField } }"},
		"Authorization", "Bearer "+e.annTok)
	if status != 200 || !strings.Contains(body, `"errors"`) || !strings.Contains(body, "noSuchField") {
		t.Fatalf("unknown field: %d %s", status, body)
	}
	// Without credentials: 401, as every route.
	if status, body := newClient(t, e.a.URL).do("POST", "/graphql", map[string]string{"query": "{ documents { id } }"}); status != 401 {
		t.Fatalf("anonymous: %d %s", status, body)
	}
	// GET opens GraphiQL (or says how to build it).
	if status, body := get(t, e.a.URL+"/graphql"); status != 200 || !strings.Contains(body, "GraphQL") {
		t.Fatalf("GET /graphql: %d %.200s", status, body)
	}
}

func TestGraphQLMutationsFollowTheRESTRights(t *testing.T) {
	t.Parallel()
	e := newGQLEnv(t)

	// A viewer may not comment: bob has no share yet, then a viewer one.
	var cm struct{ Comment struct{ ID int } }
	if err := e.bob.do(`mutation { comment(fileId: 1, body: "hi") { id } }`, nil, &cm); code(err) != docflow.EFORBIDDEN {
		t.Fatalf("bob comments on ann's document: %v, want forbidden", err)
	}
	var sh struct{ Share struct{ Role string } }
	if err := e.ann.do(`mutation { share(fileId: 1, userId: "bob@example.com") { role } }`, nil, &sh); err != nil ||
		sh.Share.Role != docflow.RoleViewer {
		t.Fatalf("ann shares with bob: %+v %v", sh, err)
	}
	if err := e.bob.do(`mutation { comment(fileId: 1, body: "hi") { id } }`, nil, &cm); code(err) != docflow.EFORBIDDEN {
		t.Fatalf("a viewer comments: %v, want forbidden", err)
	}
	if err := e.ann.do(`mutation { comment(fileId: 1, body: "look @bob@example.com") { id } }`, nil, &cm); err != nil || cm.Comment.ID == 0 {
		t.Fatalf("the owner comments: %+v %v", cm, err)
	}
	var seen struct {
		Document struct {
			Comments []struct {
				Body     string
				Mentions []string
			}
			Shares []struct{ SharedWithUserID string }
		}
	}
	if err := e.ann.do(`{ document(id: 1) { comments { body mentions } shares { sharedWithUserId } } }`, nil, &seen); err != nil ||
		len(seen.Document.Comments) != 1 || len(seen.Document.Shares) != 1 {
		t.Fatalf("ann's document after the writes: %+v %v", seen, err)
	}
	// Metadata: PATCH /api/files/{id}/metadata's rule, checks and answer.
	var upd struct {
		UpdateMetadata struct {
			DocumentTitle *string
			AiMetadata    map[string]any
		}
	}
	if err := e.ann.do(`mutation { updateMetadata(id: 1, input: {title: "Renamed", tags: ["Tax"], fields: {amount: "12.5"}}) {
		documentTitle aiMetadata } }`, nil, &upd); err != nil || upd.UpdateMetadata.DocumentTitle == nil ||
		*upd.UpdateMetadata.DocumentTitle != "Renamed" || upd.UpdateMetadata.AiMetadata["amount"] != "12.50" {
		t.Fatalf("the owner edits metadata: %+v %v", upd, err)
	}
	if err := e.ann.do(`mutation { updateMetadata(id: 1, input: {documentDate: "yesterday"}) { id } }`, nil, &upd); code(err) != docflow.EINVALID {
		t.Fatalf("a bad date: %v, want invalid", err)
	}
	if err := e.bob.do(`mutation { updateMetadata(id: 1, input: {title: "Mine"}) { id } }`, nil, &upd); code(err) != docflow.EFORBIDDEN {
		t.Fatalf("a viewer edits metadata: %v, want forbidden", err)
	}

	var del struct{ DeleteDocument bool }
	if err := e.bob.do(`mutation { deleteDocument(id: 1) }`, nil, &del); code(err) != docflow.EFORBIDDEN {
		t.Fatalf("a viewer deletes: %v, want forbidden", err)
	}
	if err := e.ann.do(`mutation { deleteDocument(id: 2) }`, nil, &del); err != nil || !del.DeleteDocument {
		t.Fatalf("the owner deletes: %v", err)
	}
	if err := e.ann.do(`{ document(id: 2) { id } }`, nil, &seen); code(err) != docflow.ENOTFOUND {
		t.Fatalf("the deleted document: %v, want not found", err)
	}

	// A session's mutation sent from another site is refused, and
	// nothing changes.
	c := newClient(t, e.a.URL)
	c.must(200, "POST", "/login", map[string]string{"username": "ann@example.com", "password": apptest.Password("ann@example.com")})
	status, body := c.do("POST", "/graphql", map[string]string{"query": `mutation { deleteDocument(id: 1) }`},
		"Origin", "https://evil.example")
	if status != 403 {
		t.Fatalf("cross-site mutation: %d %s", status, body)
	}
	status, body = c.do("POST", "/graphql", map[string]string{"query": `{ document(id: 1) { id } }`})
	if status != 200 || !strings.Contains(body, `"id":1`) {
		t.Fatalf("after the refused mutation: %d %s", status, body)
	}
}
