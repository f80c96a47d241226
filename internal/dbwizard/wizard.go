// Package dbwizard is the database wizard: it tests a connection to a
// database an administrator names, previews its tables, and runs a
// migration as a background job whose progress the API reads: a copy of
// docflow's own PostgreSQL database into another one, or an import of the
// original service's database (its SQLite file, or PostgreSQL) into
// docflow's. Every connection to a database server goes through
// internal/netguard's Dialer; the host is the administrator's choice, so
// private addresses are allowed (netguard's rule for endpoints an
// operator configures). The SQL is storage/postgres's, the SQLite reading
// storage/legacy's.
//
// Its files:
//   - wizard.go: Wizard, the connection test and the preview.
//   - jobs.go: starting a migration (which kind, the refusals), the
//     background run with its lease and heartbeat, resuming.
//   - contents.go: an import's contents pass, the imported files'
//     versions streamed from the original's work folder into the blob
//     store.
package dbwizard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/netguard"
	"docflow/storage/legacy"
	"docflow/storage/postgres"
)

// Config is what the wizard needs.
type Config struct {
	DB   *postgres.DB
	Jobs *postgres.MigrationJobStore
	Log  zerolog.Logger
	// Owner names this process in job leases.
	Owner string
	// Dial opens connections to database servers (default: netguard's
	// Dialer with private addresses allowed).
	Dial postgres.DialFunc
	// Batch is the rows per batch (default 1000 for a copy, 500 for an
	// import).
	Batch int
	// Lease is how long a job stays its process's without a heartbeat
	// (default 1 minute); Heartbeat how often a running job renews it
	// (default Lease/4).
	Lease, Heartbeat time.Duration
	// Blobs is the blob store the contents of imported files go to;
	// BlobRefs tells whether a file references a blob (default: the
	// files table).
	Blobs    docflow.BlobStore
	BlobRefs BlobRefs
	// AfterBatch, when set, is called after each batch a job saves; an
	// error stops the job there as if its process had stopped (tests).
	AfterBatch func(job *docflow.MigrationJob) error
}

// BlobRefs is what the wizard asks about the blobs files reference
// (postgres.FileStore).
type BlobRefs interface {
	BlobInUse(ctx context.Context, key string) (bool, error)
}

// Wizard is the database wizard of one process.
type Wizard struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns the wizard; Close stops its running jobs.
func New(cfg Config) *Wizard {
	if cfg.DB == nil || cfg.Jobs == nil || cfg.Blobs == nil {
		panic("dbwizard: New needs DB, Jobs and Blobs")
	}
	if cfg.BlobRefs == nil {
		cfg.BlobRefs = postgres.NewFileStore(cfg.DB)
	}
	if cfg.Dial == nil {
		cfg.Dial = netguard.Dialer{AllowPrivate: true, Timeout: 10 * time.Second}.DialContext
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.Lease / 4
	}
	if cfg.Owner == "" {
		cfg.Owner = "docflow"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Wizard{cfg: cfg, ctx: ctx, cancel: cancel}
}

// Close stops the running jobs (they stay resumable) and waits for them.
func (w *Wizard) Close() {
	w.cancel()
	w.wg.Wait()
}

// source is an open database of either backend.
type source struct {
	backend string
	sqlite  *legacy.SQLite
	pg      *postgres.External
}

func (s *source) legacy() docflow.LegacySource {
	if s.sqlite != nil {
		return s.sqlite
	}
	return s.pg
}

func (s *source) Close() {
	if s.sqlite != nil {
		s.sqlite.Close()
	}
	if s.pg != nil {
		s.pg.Close()
	}
}

// open connects to raw; EINVALID for a URL of neither backend.
func (w *Wizard) open(ctx context.Context, raw string) (*source, error) {
	backend, path, err := docflow.ParseDatabaseURL(raw)
	if err != nil {
		return nil, err
	}
	if backend == docflow.BackendSQLite {
		db, err := legacy.Open(ctx, path)
		if err != nil {
			return nil, err
		}
		return &source{backend: backend, sqlite: db}, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	pg, err := postgres.OpenExternal(cctx, raw, w.cfg.Dial)
	if err != nil {
		return nil, err
	}
	return &source{backend: backend, pg: pg}, nil
}

// Reason puts a failure to connect or to migrate in words for an
// administrator: the server's refusal, the network's class of failure
// (never the far side's own text), or docflow's own message.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	if r, ok := postgres.ExternalFailure(err); ok {
		return r
	}
	var de *docflow.Error
	if errors.As(err, &de) {
		return de.Message
	}
	if class := netguard.Describe(err); class != netguard.FailOther {
		return class
	}
	return err.Error()
}

// isRefusal reports an error that is the request's fault (a URL of no
// backend, a file that is not a database): the API answers it 4xx.
func isRefusal(err error) bool {
	switch docflow.ErrorCode(err) {
	case docflow.EINVALID, docflow.ENOTFOUND, docflow.EFORBIDDEN:
		var de *docflow.Error
		return errors.As(err, &de)
	}
	return false
}

// Test connects to raw and reports the server's version. A connection
// that fails (a bad password, a host that does not answer, a file that
// is not a database) is Success false with the reason, never an error;
// only a URL of no known form is an error (EINVALID).
func (w *Wizard) Test(ctx context.Context, raw string) (*docflow.ConnectionTest, error) {
	backend, _, err := docflow.ParseDatabaseURL(raw)
	if err != nil {
		return nil, err
	}
	out := &docflow.ConnectionTest{Backend: backend}
	src, err := w.open(ctx, raw)
	if err != nil {
		out.Message = "Connection failed: " + Reason(err)
		return out, nil
	}
	defer src.Close()
	if src.sqlite != nil {
		out.ServerVersion, err = src.sqlite.Version(ctx)
	} else {
		out.ServerVersion, err = src.pg.Version(ctx)
	}
	if err != nil {
		out.Message = "Connection failed: " + Reason(err)
		return out, nil
	}
	out.Success = true
	out.Message = "Connection successful"
	return out, nil
}

// Preview lists raw's tables with their row counts and says which
// migration it would be the source of. Failures are as Test's.
func (w *Wizard) Preview(ctx context.Context, raw string) (*docflow.MigrationPreview, error) {
	backend, _, err := docflow.ParseDatabaseURL(raw)
	if err != nil {
		return nil, err
	}
	out := &docflow.MigrationPreview{Backend: backend, Tables: []docflow.TableCount{}}
	src, err := w.open(ctx, raw)
	if err != nil {
		out.Message = "Connection failed: " + Reason(err)
		return out, nil
	}
	defer src.Close()
	tables, err := src.legacy().Tables(ctx)
	if err != nil {
		out.Message = Reason(err)
		return out, nil
	}
	out.Tables = tables
	for _, t := range tables {
		out.TotalRows += t.RowCount
	}
	out.Kind, err = w.kindOf(ctx, src)
	if err != nil {
		out.Message = Reason(err)
		return out, nil
	}
	out.Success = true
	switch out.Kind {
	case docflow.MigrationCopy:
		out.Message = "This is docflow's own database: it can be copied to another PostgreSQL database"
	case docflow.MigrationImport:
		out.Message = "This is the original service's database: it can be imported into docflow"
	default:
		out.Message = "This is neither docflow's database nor the original service's"
	}
	return out, nil
}

// kindOf says which migration src is the source of ("" for none).
func (w *Wizard) kindOf(ctx context.Context, src *source) (string, error) {
	if src.pg != nil {
		same, err := w.cfg.DB.SameDatabase(ctx, src.pg)
		if err != nil {
			return "", err
		}
		if same {
			return docflow.MigrationCopy, nil
		}
	}
	if _, err := postgres.PlanLegacyImport(ctx, src.legacy()); err != nil {
		if docflow.ErrorCode(err) == docflow.EINVALID {
			return "", nil
		}
		return "", err
	}
	return docflow.MigrationImport, nil
}
