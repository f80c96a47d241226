package http

import (
	"context"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// DatabaseWizard is what the database wizard's routes need
// (internal/dbwizard implements it).
type DatabaseWizard interface {
	// Test connects and reports the server's version; a failure to
	// connect is Success false with the reason, an error only for a URL
	// of no known form (EINVALID).
	Test(ctx context.Context, url string) (*docflow.ConnectionTest, error)
	// Preview lists the tables with their row counts (failures as Test's).
	Preview(ctx context.Context, url string) (*docflow.MigrationPreview, error)
	// Start begins a migration in the background and returns its job:
	// EINVALID for a refusal, EUNAVAILABLE for a database out of reach.
	Start(ctx context.Context, req docflow.MigrationRequest) (*docflow.MigrationJob, error)
	// Job returns a job (ENOTFOUND); Jobs the latest ones.
	Job(ctx context.Context, id int64) (*docflow.MigrationJob, error)
	Jobs(ctx context.Context) ([]*docflow.MigrationJob, error)
}

// DatabaseDeps is what the Database wizard section needs.
type DatabaseDeps struct {
	Wizard DatabaseWizard
}

// MountDatabase registers the Database wizard section (admin only, the
// backends list included: it tells what a server can reach).
func (s *Server) MountDatabase(d DatabaseDeps) {
	if d.Wizard == nil {
		panic("http: MountDatabase needs Wizard")
	}
	h := &databaseHandlers{s: s, d: d}
	a := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/database/backends", a, h.backends, docDatabaseBackends)
	s.Handle("POST", "/api/database/build-url", a, h.buildURL, docDatabaseBuildURL)
	// Connecting to a host that does not answer takes up to the
	// connection timeout, a count of every table longer.
	slow := Route{Auth: AuthAdmin, Timeout: 2 * time.Minute}
	s.Handle("POST", "/api/database/test-connection", slow, h.test, docDatabaseTest)
	s.Handle("POST", "/api/database/preview-migration", slow, h.preview, docDatabasePreview)
	s.Handle("POST", "/api/database/migrate", slow, h.migrate, docDatabaseMigrate)
	s.Handle("GET", "/api/database/migrations", a, h.jobs, docDatabaseMigrations)
	s.Handle("GET", "/api/database/migrations/{job_id}", a, h.job, docDatabaseMigration)
}

type databaseHandlers struct {
	s *Server
	d DatabaseDeps
}

func (h *databaseHandlers) backends(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, docflow.DatabaseBackends())
	return nil
}

func (h *databaseHandlers) buildURL(c *fasthttp.RequestCtx) error {
	var req docflow.DatabaseURLParts
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	u, err := docflow.BuildDatabaseURL(req)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, databaseURL{URL: u})
	return nil
}

type databaseURLReq struct {
	URL string `json:"url"`
}

func (h *databaseHandlers) test(c *fasthttp.RequestCtx) error {
	var req databaseURLReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	res, err := h.d.Wizard.Test(RequestContext(c), req.URL)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, res)
	return nil
}

func (h *databaseHandlers) preview(c *fasthttp.RequestCtx) error {
	var req databaseURLReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	res, err := h.d.Wizard.Preview(RequestContext(c), req.URL)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, res)
	return nil
}

// migrationBody is a job as the API shows it: the spec's success,
// tables_copied, rows_copied and errors, with the job's progress.
type migrationBody struct {
	Success bool `json:"success"`
	*docflow.MigrationJob
	ProgressURL string `json:"progress_url"`
}

func migrationOut(j *docflow.MigrationJob) migrationBody {
	if j.Errors == nil {
		j.Errors = []string{}
	}
	if j.Tables == nil {
		j.Tables = []docflow.MigrationTable{}
	}
	if j.Unmapped == nil {
		j.Unmapped = []docflow.Unmapped{}
	}
	return migrationBody{Success: j.Success(), MigrationJob: j,
		ProgressURL: "/api/database/migrations/" + strconv.FormatInt(j.ID, 10)}
}

// migrate starts the migration and answers 202 with its job; its
// progress is GET progress_url. A source or target out of reach answers
// success false with the reason, as test-connection does.
func (h *databaseHandlers) migrate(c *fasthttp.RequestCtx) error {
	var req docflow.MigrationRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	job, err := h.d.Wizard.Start(RequestContext(c), req)
	if docflow.ErrorCode(err) == docflow.EUNAVAILABLE {
		writeJSON(c, fasthttp.StatusOK, migrationUnreachable{Errors: []string{docflow.ErrorMessage(err)}})
		return nil
	}
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusAccepted, migrationOut(job))
	return nil
}

func (h *databaseHandlers) job(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "job_id")
	if err != nil {
		return err
	}
	j, err := h.d.Wizard.Job(RequestContext(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, migrationOut(j))
	return nil
}

func (h *databaseHandlers) jobs(c *fasthttp.RequestCtx) error {
	js, err := h.d.Wizard.Jobs(RequestContext(c))
	if err != nil {
		return err
	}
	out := make([]migrationBody, 0, len(js))
	for _, j := range js {
		out = append(out, migrationOut(j))
	}
	writeJSON(c, fasthttp.StatusOK, migrationList{Migrations: out})
	return nil
}
