package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// IngestRecord is one intake write.
type IngestRecord struct {
	// File carries the fields intake decided (hash, names, size, MIME,
	// owner, source, blob, pipeline). ID, CreatedAt, Status and
	// DuplicateOf are filled by Ingest.
	File *docflow.File
	// Dedup marks an exact duplicate of an existing original with status
	// duplicate. Without it the file is recorded as a normal pending file
	// that still names the original in duplicate_of.
	Dedup bool
	// SkipDuplicateRecord records nothing for a duplicate (ui-upload).
	SkipDuplicateRecord bool
	// DailyLimit > 0 refuses the upload with ERATELIMIT when the owner has
	// already recorded that many files today.
	DailyLimit int
	// Prepare is called once the row's ID and Status are known, before the
	// row is written; what it returns is written in the same transaction as
	// the row: the run to create ("" for none, as for a duplicate), its
	// options and the outbox messages to enqueue. It may be called more
	// than once (a lost race is retried), so it must have no side effects.
	Prepare func(f *docflow.File) (runID string, options map[string]any, msgs []docflow.OutboxMessage, err error)
	// Also runs last inside the same transaction (watch folders record
	// what they ingested there).
	Also func(ctx context.Context, tx pgx.Tx, f *docflow.File) error
	// ID, when not 0, is a file id drawn with NewFileID; Ingest uses it
	// when the record takes one (TakesDrawnID), else draws its own.
	ID int64
}

// TakesDrawnID reports whether Ingest uses IngestRecord.ID for a record
// with that Also, owner and daily limit: a new original is then written
// without a transaction of its own (ingestNew), whose id can be drawn
// before the record is ready.
func TakesDrawnID(also bool, owner *string, dailyLimit int) bool {
	return !also && (owner == nil || dailyLimit <= 0)
}

// NewFileID draws the next file id from the sequence, for
// IngestRecord.ID: drawn while the upload is still being stored, it costs
// the upload no time of its own.
func (s *FileService) NewFileID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT nextval('files_id_seq')`).Scan(&id); err != nil {
		return 0, fmt.Errorf("file id: %w", err)
	}
	return id, nil
}

// maxIngestAttempts bounds the retries after losing the race for the one
// original of a hash to a concurrent identical upload.
const maxIngestAttempts = 3

// Ingest records rec.File, its run, the daily count and the outbox messages
// in one transaction. It returns the original when the file is an exact
// duplicate. Concurrent identical uploads race on the unique index of
// originals: the loser retries and finds the winner as its original.
func (s *FileService) Ingest(ctx context.Context, rec IngestRecord) (dupOf *docflow.File, err error) {
	if rec.File == nil || rec.Prepare == nil {
		return nil, errors.New("ingest: File and Prepare are required")
	}
	if TakesDrawnID(rec.Also != nil, rec.File.OwnerID, rec.DailyLimit) {
		done, err := s.ingestNew(ctx, rec)
		if done || err != nil {
			return nil, err
		}
	}
	for attempt := 1; ; attempt++ {
		dupOf, err = s.ingestOnce(ctx, rec)
		if err == nil || !isUniqueViolation(err) || attempt >= maxIngestAttempts {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return dupOf, nil
}

// ingestNew records rec.File as a new original in two round trips: the id
// is drawn from the sequence first (the outbox messages carry it; the
// caller may have drawn it already, rec.ID), then the file row, its run, the daily count and the messages go as one pipelined
// batch, which PostgreSQL runs as one implicit transaction (everything up
// to the batch's single Sync commits together or not at all). It reports
// false, with nothing written, when the hash already has an original: the
// unique index of originals refuses the row and the caller takes the
// transactional path that looks the original up. That check-by-insert
// saves the lookup for the common case, new content.
//
// NOTE: it serves neither a daily limit (the counter must be checked
// before the row is written) nor Also (it needs a live transaction).
func (s *FileService) ingestNew(ctx context.Context, rec IngestRecord) (bool, error) {
	f := rec.File
	id := rec.ID
	if id == 0 {
		var err error
		if id, err = s.NewFileID(ctx); err != nil {
			return false, fmt.Errorf("ingest: %w", err)
		}
	}
	now := s.db.Now()
	f.ID, f.Status, f.DuplicateOf = id, docflow.StatusPending, nil
	runID, opts, msgs, err := rec.Prepare(f)
	if err != nil {
		f.ID = 0
		return false, err
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	meta, err := json.Marshal(f.AIMetadata)
	if err != nil {
		f.ID = 0
		return false, fmt.Errorf("ingest: ai_metadata: %w", err)
	}
	b := &pgx.Batch{}
	// NOTE: the outbox trigger's NOTIFY would take PostgreSQL's cluster-wide
	// notify lock from commit until the WAL flush, so concurrent uploads
	// would commit one flush at a time; the transaction keeps quiet and the
	// relay is woken after commit by one coalesced notification.
	b.Queue(`SELECT set_config('docflow.outbox_quiet', 'on', true)`)
	b.Queue(`INSERT INTO files (id, filehash, original_filename, stored_filename, file_size, mime_type,
		owner_id, pipeline_id, status, source, original_blob, ai_metadata, task_id, created_at, updated_at)
		VALUES ($1,$2,$3,$4,$5,$6,$7,$8,'pending',$9,$10,$11,$12,$13,$13) RETURNING created_at, updated_at`,
		id, f.FileHash, f.OriginalFilename, f.StoredFilename, f.FileSize, f.MimeType, f.OwnerID, f.PipelineID,
		f.Source, f.OriginalBlob, meta, runID, now)
	q := batchTx{b: b}
	if f.OwnerID != nil {
		b.Queue(`INSERT INTO upload_counters (owner_id, day, count) VALUES ($1, $2, 1)
			ON CONFLICT (owner_id, day) DO UPDATE SET count = upload_counters.count + 1`, *f.OwnerID, now.UTC().Format("2006-01-02"))
	}
	if runID != "" {
		if err := insertRun(ctx, q, runID, f, opts, now); err != nil {
			f.ID = 0
			return false, err
		}
	}
	if err := Enqueue(ctx, q, msgs...); err != nil {
		f.ID = 0
		return false, err
	}
	br := s.db.Pool.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&f.CreatedAt, &f.UpdatedAt)
	}
	for i := 2; i < b.Len() && err == nil; i++ {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		f.ID = 0
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "files_one_original":
			return false, nil
		case errors.As(err, &pgErr) && pgErr.Code == "23503" && strings.Contains(pgErr.ConstraintName, "pipeline"):
			return false, docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
		}
		return false, fmt.Errorf("ingest: %w", err)
	}
	f.TaskID = runID
	if len(msgs) > 0 {
		s.waker.wake()
	}
	return true, nil
}

// outboxWaker sends the outbox notification on behalf of transactions that
// kept quiet: one at a time, and one more for every burst of requests that
// arrived while one was in flight, so a thousand commits a second cost a
// few notifications. A lost one is covered by the relay's polling.
type outboxWaker struct {
	db         *DB
	mu         sync.Mutex
	busy, more bool
}

func (w *outboxWaker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy {
		w.more = true
		return
	}
	w.busy = true
	// The goroutine ends by itself after its last notification.
	go w.run()
}

func (w *outboxWaker) run() {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		w.db.Pool.Exec(ctx, `SELECT pg_notify($1, '')`, OutboxChannel) //nolint:errcheck
		cancel()
		w.mu.Lock()
		if !w.more {
			w.busy = false
			w.mu.Unlock()
			return
		}
		w.more = false
		w.mu.Unlock()
	}
}

// batchTx lets code written for a transaction (insertRun, Enqueue)
// add its statements to a batch instead.
// NOTE: only Exec is provided, and it defers errors to the batch's results;
// any other pgx.Tx method panics on the nil embedded Tx, which the intake
// tests would show at once.
type batchTx struct {
	pgx.Tx
	b *pgx.Batch
}

func (t batchTx) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t.b.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (s *FileService) ingestOnce(ctx context.Context, rec IngestRecord) (*docflow.File, error) {
	f := rec.File
	var dupOf *docflow.File
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		dupOf = nil
		f.Status, f.DuplicateOf = docflow.StatusPending, nil
		orig, err := scanFile(tx.QueryRow(ctx, `SELECT `+fileCols+` FROM files f
			WHERE f.filehash=$1 AND f.status <> 'duplicate' AND f.duplicate_of IS NULL ORDER BY f.id LIMIT 1`, f.FileHash), false)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("ingest: find original: %w", err)
		}
		if orig != nil {
			dupOf = orig
			f.DuplicateOf = &orig.ID
			if rec.Dedup {
				f.Status = docflow.StatusDuplicate
				if rec.SkipDuplicateRecord {
					return nil
				}
			}
		}
		now := s.db.Now()
		if f.OwnerID != nil {
			day := now.UTC().Format("2006-01-02")
			if rec.DailyLimit > 0 {
				var n int
				err := tx.QueryRow(ctx, `INSERT INTO upload_counters (owner_id, day, count) VALUES ($1, $2, 1)
					ON CONFLICT (owner_id, day) DO UPDATE SET count = upload_counters.count + 1
					WHERE upload_counters.count < $3 RETURNING count`, *f.OwnerID, day, rec.DailyLimit).Scan(&n)
				if errors.Is(err, pgx.ErrNoRows) {
					e := docflow.Errorf(docflow.ERATELIMIT, "Daily upload limit of %d reached", rec.DailyLimit)
					e.RetryAfter = secondsToMidnight(now)
					return e
				} else if err != nil {
					return fmt.Errorf("ingest: count upload: %w", err)
				}
			} else if _, err := tx.Exec(ctx, `INSERT INTO upload_counters (owner_id, day, count) VALUES ($1, $2, 1)
				ON CONFLICT (owner_id, day) DO UPDATE SET count = upload_counters.count + 1`, *f.OwnerID, day); err != nil {
				return fmt.Errorf("ingest: count upload: %w", err)
			}
		}
		if f.AIMetadata == nil {
			f.AIMetadata = map[string]any{}
		}
		meta, _ := json.Marshal(f.AIMetadata)
		err = tx.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
			owner_id, pipeline_id, status, source, duplicate_of, original_blob, ai_metadata, created_at, updated_at)
			VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$13) RETURNING id, created_at, updated_at`,
			f.FileHash, f.OriginalFilename, f.StoredFilename, f.FileSize, f.MimeType, f.OwnerID, f.PipelineID,
			f.Status, f.Source, f.DuplicateOf, f.OriginalBlob, meta, now).Scan(&f.ID, &f.CreatedAt, &f.UpdatedAt)
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23503" {
				return docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
			}
			return fmt.Errorf("ingest: insert file: %w", err)
		}
		runID, opts, msgs, err := rec.Prepare(f)
		if err != nil {
			return err
		}
		if runID != "" {
			if err := insertRun(ctx, tx, runID, f, opts, now); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE files SET task_id=$2 WHERE id=$1`, f.ID, runID); err != nil {
				return fmt.Errorf("ingest: set task: %w", err)
			}
			f.TaskID = runID
		}
		if err := Enqueue(ctx, tx, msgs...); err != nil {
			return err
		}
		if rec.Also != nil {
			return rec.Also(ctx, tx, f)
		}
		return nil
	})
	if err != nil {
		f.ID = 0
		return nil, err
	}
	return dupOf, nil
}

func insertRun(ctx context.Context, tx pgx.Tx, runID string, f *docflow.File, opts map[string]any, now time.Time) error {
	if opts == nil {
		opts = map[string]any{}
	}
	o, err := json.Marshal(opts)
	if err != nil {
		return fmt.Errorf("run options: %w", err)
	}
	_, err = tx.Exec(ctx, `INSERT INTO runs (id, file_id, pipeline_id, status, options, created_at, updated_at)
		VALUES ($1, $2, $3, 'pending', $4, $5, $5)`, runID, f.ID, f.PipelineID, o, now)
	if err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	return nil
}

func secondsToMidnight(now time.Time) int {
	u := now.UTC()
	next := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	return int(next.Sub(u).Seconds()) + 1
}

// Requeue is one file queued again with a new run.
type Requeue struct {
	FileID  int64
	RunID   string
	Options map[string]any
}

// RequeueFiles creates a pending run for each item, points the file at it,
// sets it pending and enqueues what msgs returns, all in one transaction.
// Files that vanished meanwhile are returned in missing.
func (s *FileService) RequeueFiles(ctx context.Context, items []Requeue,
	msgs func(f *docflow.File, runID string) ([]docflow.OutboxMessage, error)) (done []*docflow.File, missing []int64, err error) {
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		done, missing = nil, nil
		now := s.db.Now()
		var out []docflow.OutboxMessage
		for _, it := range items {
			f, err := scanFile(tx.QueryRow(ctx, `UPDATE files f SET status='pending', task_id=$2, updated_at=$3
				WHERE f.id=$1 RETURNING `+fileCols, it.FileID, it.RunID, now), false)
			if errors.Is(err, pgx.ErrNoRows) {
				missing = append(missing, it.FileID)
				continue
			} else if err != nil {
				return fmt.Errorf("requeue file %d: %w", it.FileID, err)
			}
			if err := insertRun(ctx, tx, it.RunID, f, it.Options, now); err != nil {
				return err
			}
			m, err := msgs(f, it.RunID)
			if err != nil {
				return err
			}
			out = append(out, m...)
			done = append(done, f)
		}
		return Enqueue(ctx, tx, out...)
	})
	if err != nil {
		return nil, nil, err
	}
	return done, missing, nil
}
