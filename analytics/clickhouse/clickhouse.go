package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
)

// DefaultDatabase is used when the URL names none.
const DefaultDatabase = "docflow"

// Defaults for Config fields left zero.
const (
	DefaultReadTimeout = 30 * time.Second
	DefaultDialTimeout = 5 * time.Second
)

// DefaultFlushInterval is the ClickHouse recorder's analytics.Options
// FlushInterval when left zero. Each insert into events is a part written
// by the table and by every rollup view, then merged: at a pipeline's
// rate of a few thousand metrics a second, inserting every second cost
// the server more CPU than the rows themselves. Every 5 s (the sampling
// period and the /ops page's refresh) cuts that about five times.
//
// NOTE: an insert costs the server about the same whatever its size (a
// part written to each table the views feed, merged later), so fewer,
// larger inserts are what keep recording cheap on a machine that runs the
// server too (docs/benchmarks.md, "Analytics recording").
const DefaultFlushInterval = 5 * time.Second

// DefaultWriters is the ClickHouse recorder's analytics.Options Writers
// when left zero. The server runs each INSERT, with every rollup view it
// feeds, on one thread, and the client encodes a batch before sending it:
// with one write at a time the encoding, the round trip and the server's
// work on a batch follow one another, and a backlog drains at one core's
// pace. Two writes overlap them; ClickHouse needs no order among rows.
const DefaultWriters = 2

// Config says where ClickHouse is.
type Config struct {
	// URL is like clickhouse://user:password@127.0.0.1:9000/docflow; the path
	// names the database, which Open creates when missing.
	URL string
	// User and Password, when not empty, replace those of URL, so that a
	// password need not be written into the URL.
	User     string
	Password string
	// ReadTimeout bounds each wait for the server (default 30 s).
	ReadTimeout time.Duration
	// DialTimeout bounds connecting (default 5 s).
	DialTimeout time.Duration
	// RetentionDays, when positive, keeps that many days: Open sets the
	// tables' TTL where the server has it and drops older day partitions
	// at start and every RetentionEvery (default an hour).
	RetentionDays  int
	RetentionEvery time.Duration
	// Offline lets Open start while the server does not answer (a
	// connection that fails, not a server's refusal): the Recorder's
	// writes fail, and metrics are held and dropped as opts bound them,
	// until it answers; the database and tables are made before the first
	// write that reaches it. Metrics are not the system of record: a
	// process starts during an outage of ClickHouse.
	Offline bool
}

// validName reports whether s is a plain identifier, safe to splice into
// SQL unquoted.
func validName(s string) bool {
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// ParseURL turns cfg into clickhouse-go options and the database name. The
// options name no database: the database may not exist yet (a handshake
// naming a missing database fails), so every statement qualifies the table.
func ParseURL(cfg Config) (*ch.Options, string, error) {
	opts, err := ch.ParseDSN(cfg.URL)
	if err != nil {
		return nil, "", fmt.Errorf("parse clickhouse url: %w", err)
	}
	if opts.Protocol != ch.Native {
		// NOTE: the HTTP protocol of clickhouse-go fails on 18.16.
		return nil, "", fmt.Errorf("parse clickhouse url: only the native protocol is supported")
	}
	if cfg.User != "" {
		opts.Auth.Username = cfg.User
	}
	if cfg.Password != "" {
		opts.Auth.Password = cfg.Password
	}
	database := opts.Auth.Database
	if database == "" {
		database = DefaultDatabase
	}
	if !validName(database) {
		return nil, "", fmt.Errorf("parse clickhouse url: invalid database name %q", database)
	}
	opts.Auth.Database = ""
	opts.ReadTimeout = cfg.ReadTimeout
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	opts.DialTimeout = cfg.DialTimeout
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	return opts, database, nil
}

// Recorder batches metrics into database.events (the materialized views
// roll them up) and answers the dashboard queries.
type Recorder struct {
	*analytics.Recorder
	Queries
	owned     driver.Conn // closed by Close when Open made it
	w         *writer
	retention *retainer
}

var (
	_ docflow.Recorder  = (*Recorder)(nil)
	_ docflow.Analytics = (*Recorder)(nil)
)

// Open connects to cfg.URL, creates the database and table if missing, and
// starts a Recorder that closes the connection on Close.
func Open(ctx context.Context, cfg Config, opts analytics.Options) (*Recorder, error) {
	chOpts, database, err := ParseURL(cfg)
	if err != nil {
		return nil, err
	}
	conn, err := ch.Open(chOpts)
	if err != nil {
		return nil, fmt.Errorf("open clickhouse: %w", err)
	}
	// setup makes the schema and sets the TTL.
	setup := func(ctx context.Context) error {
		if err := Migrate(ctx, conn, database); err != nil {
			return err
		}
		if cfg.RetentionDays > 0 {
			if _, err := ApplyTTL(ctx, conn, database, cfg.RetentionDays); err != nil {
				return err
			}
		}
		return nil
	}
	serr := conn.Ping(ctx)
	if serr != nil {
		serr = fmt.Errorf("ping clickhouse: %w", serr)
	} else {
		serr = setup(ctx)
	}
	if serr != nil && (!cfg.Offline || isServerError(serr)) {
		conn.Close()
		return nil, serr
	}
	r, err := New(conn, database, opts)
	if err != nil {
		conn.Close()
		return nil, err
	}
	r.owned = conn
	if serr != nil {
		// NOTE: the first write (the batcher retries with backoff) makes
		// the schema once the server answers.
		r.w.pending(setup)
		if opts.Logger != nil {
			opts.Logger.Warn().Err(serr).Msg("ClickHouse does not answer: starting without it; metrics are held in memory " +
				"(within the buffer's bound) and written once it answers")
		}
	}
	if cfg.RetentionDays > 0 {
		r.retention = startRetention(conn, database, cfg, opts)
	}
	return r, nil
}

// New starts a Recorder writing to database.events over conn (see Migrate);
// the caller keeps ownership of conn.
func New(conn driver.Conn, database string, opts analytics.Options) (*Recorder, error) {
	q, err := NewQueries(conn, database)
	if err != nil {
		return nil, err
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Writers <= 0 {
		opts.Writers = DefaultWriters
	}
	w := &writer{conn: conn, uncertain: map[string]bool{}, table: database + ".events", hists: q.hists}
	w.columns.New = func() any { return new(analytics.ColumnBuffers) }
	rec, err := analytics.NewRecorder(w, opts)
	if err != nil {
		return nil, fmt.Errorf("clickhouse recorder: %w", err)
	}
	return &Recorder{Recorder: rec, Queries: q, w: w}, nil
}

// Close flushes, stops the writer and closes the connection Open made.
func (r *Recorder) Close() error {
	if r.retention != nil {
		r.retention.stop()
	}
	err := r.Recorder.Close()
	if r.owned != nil {
		if cerr := r.owned.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close clickhouse: %w", cerr))
		}
	}
	return err
}

type writer struct {
	conn  driver.Conn
	table string // database.events
	// columns holds *analytics.ColumnBuffers: the driver copies each
	// column in Append, so one set serves batch after batch.
	columns sync.Pool
	// inserts caches the INSERT statement of each set of columns sent
	// (a few dozen in practice; at most maxInserts are kept).
	insertsMu sync.Mutex
	inserts   map[analytics.ColumnSet]string

	// mu guards uncertain: the tokens of the batches whose data was sent
	// but whose answer never came, so they may have landed (several
	// writes run at once). Only their retries are looked up (a batch that
	// failed before sending is not).
	mu        sync.Mutex
	uncertain map[string]bool

	// hists is the cache of the Queries beside the writer: told of rows
	// written into buckets it may keep.
	hists *histCache

	// setup, when set, is to run before the first write (Open started
	// while the server did not answer); setupMu serializes it.
	setupMu sync.Mutex
	setup   func(ctx context.Context) error
}

// pending arranges for setup to run before the next write, until it
// succeeds once.
func (w *writer) pending(setup func(ctx context.Context) error) {
	w.setupMu.Lock()
	w.setup = setup
	w.setupMu.Unlock()
}

// ensureSetup runs the pending setup, if any.
func (w *writer) ensureSetup(ctx context.Context) error {
	w.setupMu.Lock()
	defer w.setupMu.Unlock()
	if w.setup == nil {
		return nil
	}
	if err := w.setup(ctx); err != nil {
		return fmt.Errorf("prepare clickhouse: %w", err)
	}
	w.setup = nil
	return nil
}

// maxUncertain bounds the tokens kept: a batch given up at Close never
// comes back to clear its own.
const maxUncertain = 64

// markUncertain remembers (on) or forgets token as one whose insert may
// have landed.
func (w *writer) markUncertain(token string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !on {
		delete(w.uncertain, token)
		return
	}
	if len(w.uncertain) >= maxUncertain {
		clear(w.uncertain)
	}
	w.uncertain[token] = true
}

// WriteMetrics sends rows as one INSERT block, built a whole column at a
// time. The insert runs under the Batcher's batch token as its query id
// (logged in system.query_log); a retry of the same batch first asks the
// log whether that insert finished, so a write that landed while its
// answer was lost (a timeout, a cut connection) is not written twice.
func (w *writer) WriteMetrics(ctx context.Context, rows []docflow.Metric) error {
	if err := w.ensureSetup(ctx); err != nil {
		return err
	}
	token, attempt, ok := analytics.BatchToken(ctx)
	if ok {
		w.mu.Lock()
		check := attempt > 1 && w.uncertain[token]
		w.mu.Unlock()
		if check {
			landed, err := w.landed(ctx, token, len(rows))
			if err != nil {
				return fmt.Errorf("check an earlier attempt: %w", err)
			}
			if landed {
				w.markUncertain(token, false)
				w.wrote(rows)
				return nil
			}
		}
		ctx = ch.Context(ctx, ch.WithQueryID(token), ch.WithSettings(ch.Settings{"log_queries": 1}))
	}
	cols := w.columns.Get().(*analytics.ColumnBuffers)
	defer func() { cols.Reset(); w.columns.Put(cols) }()
	filled := cols.Fill(rows, clampTime)
	// Only the columns some row sets are sent (see ColumnBuffers.Used):
	// the driver builds every column it is given afresh for each batch,
	// and a batch of step metrics leaves more than half of them empty.
	used := cols.Used()
	batch, err := w.conn.PrepareBatch(ctx, w.insert(used))
	if err != nil {
		return fmt.Errorf("prepare metrics insert: %w", err)
	}
	// Close ends the INSERT without the buffered rows when Send is not reached.
	defer batch.Close()
	j := 0
	for i, col := range filled {
		if !used.Has(i) {
			continue
		}
		if err := batch.Column(j).Append(col); err != nil {
			// The driver checks values client-side: the same rows would
			// fail again.
			return analytics.Permanent(fmt.Errorf("append metric column %s: %w", analytics.Columns()[i], err))
		}
		j++
	}
	if err := batch.Send(); err != nil {
		if ok {
			w.markUncertain(token, true)
		}
		return fmt.Errorf("send metrics: %w", err)
	}
	if ok && attempt > 1 {
		w.markUncertain(token, false)
	}
	w.wrote(rows)
	return nil
}

// wrote tells the histogram cache which buckets rows went into.
func (w *writer) wrote(rows []docflow.Metric) {
	if w.hists == nil || len(rows) == 0 {
		return
	}
	earliest := rows[0].Time
	for i := range rows {
		if rows[i].Time.Before(earliest) {
			earliest = rows[i].Time
		}
	}
	w.hists.wrote(earliest, time.Now())
}

// insert is the INSERT statement naming the columns of set.
func (w *writer) insert(set analytics.ColumnSet) string {
	w.insertsMu.Lock()
	defer w.insertsMu.Unlock()
	if q, ok := w.inserts[set]; ok {
		return q
	}
	if w.inserts == nil || len(w.inserts) >= maxInserts {
		w.inserts = map[analytics.ColumnSet]string{}
	}
	q := "INSERT INTO " + w.table + " (" + set.List() + ")"
	w.inserts[set] = q
	return q
}

// maxInserts bounds the INSERT statements cached by a writer.
const maxInserts = 256

// landed reports whether the insert with query id token finished having
// written n rows; it is an error while that insert still runs. The query
// log is flushed first: it is written in the background. A server that refuses either statement (no SYSTEM FLUSH
// LOGS right, no query log) answers "not landed", and the batch is
// written again as before.
func (w *writer) landed(ctx context.Context, token string, n int) (bool, error) {
	// An attempt the server is still running may yet land: wait for it
	// (the Batcher retries later) rather than race it.
	var running uint64
	if err := w.conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id = ?", token).Scan(&running); err != nil {
		if !isServerError(err) {
			return false, err
		}
	} else if running > 0 {
		return false, errors.New("the earlier attempt is still running")
	}
	if err := w.conn.Exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
		if isServerError(err) {
			return false, nil
		}
		return false, err
	}
	var written uint64
	err := w.conn.QueryRow(ctx, `SELECT toUInt64(max(written_rows)) FROM system.query_log
WHERE query_id = ? AND exception = '' AND written_rows > 0`, token).Scan(&written)
	switch {
	case isServerError(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return written >= uint64(n), nil
}

// isServerError reports an error the server answered with (as opposed to
// a connection that failed).
func isServerError(err error) bool {
	var ex *ch.Exception
	return errors.As(err, &ex)
}

func (w *writer) Ping(ctx context.Context) error { return w.conn.Ping(ctx) }

// The range of DateTime, in Unix seconds, that clickhouse-go accepts
// (1970-01-01 00:00:00 to 2105-12-31 23:59:59 UTC).
const (
	minUnix = 0
	maxUnix = 4291747199
)

// clampTime keeps t within what a DateTime column holds, so a stray clock
// value is stored at the edge of the range rather than failing its batch.
func clampTime(t time.Time) time.Time {
	switch {
	case t.Unix() < minUnix:
		return time.Unix(minUnix, 0).UTC()
	case t.Unix() > maxUnix:
		return time.Unix(maxUnix, 0).UTC()
	}
	return t
}

// Queries answers the dashboard queries (docflow.Analytics) from the
// per-minute rollups. It needs no Recorder.
type Queries struct {
	conn     driver.Conn
	database string
	// hists keeps the histograms read for percentiles (hist.go), shared
	// by the copies of a Queries.
	hists *histCache
}

// NewQueries returns Queries over conn.
func NewQueries(conn driver.Conn, database string) (Queries, error) {
	if conn == nil {
		return Queries{}, errors.New("clickhouse metric queries: nil conn")
	}
	if !validName(database) {
		return Queries{}, fmt.Errorf("clickhouse metric queries: invalid database name %q", database)
	}
	return Queries{conn: conn, database: database, hists: newHistCache()}, nil
}
