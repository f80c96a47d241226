package docflow

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DatabaseBackend is one kind of database the wizard reads or writes
// (GET /api/database/backends).
type DatabaseBackend struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	DefaultPort  *int   `json:"default_port"`
	Description  string `json:"description"`
	RequiresHost bool   `json:"requires_host"`
}

// Backend ids of the database wizard.
const (
	BackendPostgres = "postgresql"
	BackendSQLite   = "sqlite"
)

// DatabaseBackends lists what the wizard speaks: PostgreSQL (docflow's
// own database, a copy's target, or the original service's database) and
// SQLite (the original service's default, read only).
func DatabaseBackends() []DatabaseBackend {
	port := 5432
	return []DatabaseBackend{
		{ID: BackendPostgres, Label: "PostgreSQL", DefaultPort: &port, RequiresHost: true,
			Description: "docflow's own database, another PostgreSQL to copy it to, or the original service's database on PostgreSQL"},
		{ID: BackendSQLite, Label: "SQLite", RequiresHost: false,
			Description: "the original service's default database file (read only: an import source)"},
	}
}

// DatabaseURLParts are the fields of POST /api/database/build-url.
type DatabaseURLParts struct {
	Backend  string `json:"backend"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	Database string `json:"database"`
	Username string `json:"username"`
	Password string `json:"password"`
	SSLMode  string `json:"ssl_mode"`
}

// sslModes are libpq's sslmode values.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// BuildDatabaseURL turns parts into a connection URL: postgres://… for
// PostgreSQL (user name and password escaped, sslmode prefer unless set),
// sqlite:///<path> for SQLite (Database is the file's path). EINVALID
// names the field at fault.
func BuildDatabaseURL(p DatabaseURLParts) (string, error) {
	switch strings.ToLower(strings.TrimSpace(p.Backend)) {
	case BackendPostgres, "postgres":
		host := strings.TrimSpace(p.Host)
		if host == "" {
			return "", fieldError("host", "host is required for PostgreSQL")
		}
		if strings.ContainsAny(host, "/@?# ") {
			return "", fieldError("host", "host must be a host name or an address")
		}
		port := p.Port
		if port == 0 {
			port = 5432
		}
		if port < 1 || port > 65535 {
			return "", fieldError("port", "port must be between 1 and 65535")
		}
		db := strings.TrimSpace(p.Database)
		if db == "" {
			return "", fieldError("database", "database is required")
		}
		mode := strings.TrimSpace(p.SSLMode)
		if mode == "" {
			mode = "prefer"
		}
		if !containsString(sslModes, mode) {
			return "", fieldError("ssl_mode", "ssl_mode must be one of %s", strings.Join(sslModes, ", "))
		}
		u := url.URL{Scheme: "postgres", Host: joinHostPort(host, port), Path: "/" + db}
		switch {
		case p.Username != "" && p.Password != "":
			u.User = url.UserPassword(p.Username, p.Password)
		case p.Username != "":
			u.User = url.User(p.Username)
		}
		u.RawQuery = url.Values{"sslmode": {mode}}.Encode()
		return u.String(), nil
	case BackendSQLite:
		path := strings.TrimSpace(p.Database)
		if path == "" {
			return "", fieldError("database", "database is the SQLite file's path")
		}
		if !strings.HasPrefix(path, "/") {
			return "", fieldError("database", "the SQLite file's path must be absolute")
		}
		return "sqlite://" + path, nil
	case "":
		return "", fieldError("backend", "backend is required (%s or %s)", BackendPostgres, BackendSQLite)
	}
	return "", fieldError("backend", "unknown backend %q (known: %s, %s)", p.Backend, BackendPostgres, BackendSQLite)
}

// ParseDatabaseURL says which backend raw names: PostgreSQL for
// postgres:// and postgresql:// URLs, SQLite for sqlite:///<path> (the
// SQLAlchemy spelling the original service uses) with the file's path.
func ParseDatabaseURL(raw string) (backend, sqlitePath string, err error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", "", fieldError("url", "url is required")
	}
	u, perr := url.Parse(raw)
	if perr != nil {
		return "", "", fieldError("url", "url is not a URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql", "postgresql+psycopg2", "postgresql+psycopg":
		if u.Host == "" {
			return "", "", fieldError("url", "a PostgreSQL URL needs a host")
		}
		return BackendPostgres, "", nil
	case "sqlite":
		// sqlite:////abs/path (SQLAlchemy) and sqlite:///abs/path both mean /abs/path.
		p := "/" + strings.TrimLeft(u.Path, "/")
		if u.Host != "" || p == "/" {
			return "", "", fieldError("url", "a SQLite URL is sqlite:///<absolute path of the file>")
		}
		return BackendSQLite, p, nil
	}
	return "", "", fieldError("url", "unsupported database URL (postgres://… or sqlite:///<path>)")
}

// PgxURL is raw with a SQLAlchemy driver suffix dropped
// (postgresql+psycopg2:// becomes postgresql://), for pgx.
func PgxURL(raw string) string {
	raw = strings.TrimSpace(raw)
	if i := strings.Index(raw, "://"); i > 0 {
		if j := strings.IndexByte(raw[:i], '+'); j > 0 {
			return raw[:j] + raw[i:]
		}
	}
	return raw
}

// RedactDatabaseURL hides a URL's password, for records and messages.
func RedactDatabaseURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "(unparsable URL)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// ConnectionTest is the answer of POST /api/database/test-connection.
type ConnectionTest struct {
	Success       bool   `json:"success"`
	Message       string `json:"message"`
	Backend       string `json:"backend"`
	ServerVersion string `json:"server_version"`
}

// MigrationPreview is the answer of POST /api/database/preview-migration.
type MigrationPreview struct {
	Success   bool         `json:"success"`
	Message   string       `json:"message"`
	Backend   string       `json:"backend"`
	Tables    []TableCount `json:"tables"`
	TotalRows int64        `json:"total_rows"`
	// Kind is the migration this database would be the source of: copy
	// (it is docflow's own), import (it is the original service's), or
	// "" (neither).
	Kind string `json:"kind"`
}

// TableCount is a table and how many rows it holds.
type TableCount struct {
	Name     string `json:"name"`
	RowCount int64  `json:"row_count"`
}

// LegacyRow is one row of the original service's database, by lower-case
// column name. Values are what the driver gives: int64, float64, bool,
// string, []byte, time.Time or nil; the importer reads each as it needs.
type LegacyRow map[string]any

// LegacySource reads the original service's database (its SQLite file or
// its PostgreSQL database), read only.
type LegacySource interface {
	// Tables lists the tables with their row counts.
	Tables(ctx context.Context) ([]TableCount, error)
	// Columns lists a table's column names in lower case; ENOTFOUND when
	// there is no such table.
	Columns(ctx context.Context, table string) ([]string, error)
	// Rows returns up to limit rows of table whose integer id is above
	// after, by id, with the columns cols (which Columns listed).
	Rows(ctx context.Context, table string, cols []string, after int64, limit int) ([]LegacyRow, error)
	Close() error
}

// Kinds of database migration.
const (
	// MigrationCopy copies docflow's own database into another PostgreSQL.
	MigrationCopy = "copy"
	// MigrationImport imports the original service's database into docflow's.
	MigrationImport = "import"
)

// MigrationRequest is what POST /api/database/migrate asks for.
type MigrationRequest struct {
	SourceURL string `json:"source_url"`
	TargetURL string `json:"target_url"`
	// SourceFilesDir is the original service's work folder as this
	// machine sees it (an absolute path): an import brings the documents
	// themselves from it into the blob store. Empty: records only.
	SourceFilesDir string `json:"source_files_dir"`
	// SourceWorkdir is the folder the original's records name (its
	// WORKDIR, "/workdir" when empty): recorded paths under it are found
	// under SourceFilesDir.
	SourceWorkdir string `json:"source_workdir"`
}

// Statuses of a migration job.
const (
	MigrationRunning   = "running"
	MigrationCompleted = "completed"
	MigrationFailed    = "failed"
)

// MigrationTable is one table's progress in a migration job.
type MigrationTable struct {
	Name       string `json:"name"`
	RowCount   int64  `json:"row_count"`
	RowsCopied int64  `json:"rows_copied"`
	Done       bool   `json:"done"`
}

// Unmapped is what an import could not carry over: a table, or some rows
// or fields of one, with the reason.
type Unmapped struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	Reason string `json:"reason"`
	// WholeTable is true when no row of the table was imported; false
	// when the reason concerns some of its rows (left out, or changed on
	// the way).
	WholeTable bool `json:"whole_table"`
}

// MigrationJob is a migration running in the background, or done; its
// progress is what GET /api/database/migrations/{id} answers.
type MigrationJob struct {
	ID           int64            `json:"job_id"`
	Kind         string           `json:"kind"`
	Source       string           `json:"source"` // password hidden
	Target       string           `json:"target"` // password hidden
	Status       string           `json:"status"`
	Tables       []MigrationTable `json:"tables"`
	TablesCopied int              `json:"tables_copied"`
	RowsCopied   int64            `json:"rows_copied"`
	Errors       []string         `json:"errors"`
	Unmapped     []Unmapped       `json:"unmapped"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
	FinishedAt   *time.Time       `json:"finished_at"`
}

// Success is the spec's success flag of a job: not failed.
func (j *MigrationJob) Success() bool { return j.Status != MigrationFailed }

// Count fills TablesCopied (the tables done) and RowsCopied (the rows of
// every table) from Tables.
func (j *MigrationJob) Count() {
	j.TablesCopied, j.RowsCopied = 0, 0
	for _, t := range j.Tables {
		if t.Done {
			j.TablesCopied++
		}
		j.RowsCopied += t.RowsCopied
	}
}

// Table returns the progress entry of name, adding it when missing.
func (j *MigrationJob) Table(name string) *MigrationTable {
	for i := range j.Tables {
		if j.Tables[i].Name == name {
			return &j.Tables[i]
		}
	}
	j.Tables = append(j.Tables, MigrationTable{Name: name})
	return &j.Tables[len(j.Tables)-1]
}

// AddUnmapped adds n rows of table to the report under reason, merging
// with an entry of the same table and reason.
func (j *MigrationJob) AddUnmapped(table, reason string, n int64) {
	if n <= 0 {
		return
	}
	for i := range j.Unmapped {
		if j.Unmapped[i].Table == table && j.Unmapped[i].Reason == reason {
			j.Unmapped[i].Rows += n
			return
		}
	}
	j.Unmapped = append(j.Unmapped, Unmapped{Table: table, Rows: n, Reason: reason})
}

func fieldError(field, format string, args ...any) *Error {
	e := Errorf(EINVALID, format, args...)
	e.Fields = []FieldError{{Field: field, Message: e.Message}}
	return e
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinHostPort(host string, port int) string {
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}
