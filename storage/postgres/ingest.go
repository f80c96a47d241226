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

// NewFileID draws the next file id from the sequence, for
// docflow.IngestRecord.ID: intake draws it while the upload is still being
// stored, so it costs the upload no time of its own.
func (s *FileStore) NewFileID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.Pool.QueryRow(ctx, `SELECT nextval('files_id_seq')`).Scan(&id); err != nil {
		return 0, fmt.Errorf("file id: %w", err)
	}
	return id, nil
}

// maxIngestAttempts bounds the retries after losing the race for the one
// original of a hash to a concurrent identical upload.
const maxIngestAttempts = 3

// Ingest records rec (see docflow.IngestRecord) in one transaction: the
// file, its run, the daily count, the outbox messages and the watch-folder
// record. It returns the original when the file is an exact duplicate.
// Concurrent identical uploads race on the unique index of originals: the
// loser retries and finds the winner as its original.
func (s *FileStore) Ingest(ctx context.Context, rec docflow.IngestRecord) (dupOf *docflow.File, err error) {
	if rec.File == nil {
		return nil, errors.New("ingest: File is required")
	}
	if rec.ID == 0 && len(rec.Messages) > 0 {
		return nil, errors.New("ingest: messages need the file id drawn beforehand")
	}
	rec.File.ID = 0
	// NOTE: a daily limit must be checked before the row is written, which
	// one batch of statements cannot do; every other record first tries
	// the batched path.
	if rec.File.OwnerID == nil || rec.DailyLimit <= 0 {
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

// ingestNew records rec.File as a new original in one round trip (two when
// the id was not drawn beforehand): the file row, its run, the daily count,
// the messages and the watch-folder record go as one pipelined batch, which
// PostgreSQL runs as one implicit transaction (everything up to the batch's
// single Sync commits together or not at all). It reports false, with
// nothing written, when the hash already has an original: the unique index
// of originals refuses the row and the caller takes the transactional path
// that looks the original up. That check-by-insert saves the lookup for the
// common case, new content.
func (s *FileStore) ingestNew(ctx context.Context, rec docflow.IngestRecord) (bool, error) {
	f := rec.File
	id := rec.ID
	if id == 0 {
		var err error
		if id, err = s.NewFileID(ctx); err != nil {
			return false, fmt.Errorf("ingest: %w", err)
		}
	}
	now := s.db.Now()
	meta, err := metadataJSON(f)
	if err != nil {
		return false, err
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
		f.Source, f.OriginalBlob, meta, rec.RunID, now)
	if f.OwnerID != nil {
		b.Queue(uploadCount, *f.OwnerID, uploadDay(now))
	}
	if rec.RunID != "" {
		args, err := runArgs(rec.RunID, id, f.PipelineID, rec.RunOptions, now)
		if err != nil {
			return false, err
		}
		b.Queue(runInsert, args...)
	}
	if len(rec.Messages) > 0 {
		a, err := outboxArrays(rec.Messages)
		if err != nil {
			return false, fmt.Errorf("ingest: %w", err)
		}
		b.Queue(outboxInsert{at: 1}.sql(), a.args()...)
	}
	if rec.Seen != nil {
		b.Queue(watchSeenInsert, watchSeenArgs(*rec.Seen, id)...)
	}
	if rec.Mail != nil {
		b.Queue(mailSeenInsert, mailSeenArgs(*rec.Mail, id)...)
	}
	if rec.Idempotency != nil {
		b.Queue(idempotencyFileUpdate, idempotencyFileArgs(*rec.Idempotency, id, f.FileHash)...)
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
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "files_one_original":
			return false, nil
		case rec.Mail != nil && mailSeenError(err) != nil:
			return false, mailSeenError(err)
		case errors.As(err, &pgErr) && pgErr.Code == "23503" && strings.Contains(pgErr.ConstraintName, "pipeline"):
			return false, docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
		}
		return false, fmt.Errorf("ingest: %w", err)
	}
	f.ID, f.Status, f.DuplicateOf, f.TaskID = id, docflow.StatusPending, nil, rec.RunID
	if len(rec.Messages) > 0 {
		s.waker.wake()
	}
	return true, nil
}

// metadataJSON is f's AI metadata as the column takes it (never null).
func metadataJSON(f *docflow.File) ([]byte, error) {
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	meta, err := json.Marshal(f.AIMetadata)
	if err != nil {
		return nil, fmt.Errorf("ingest: ai_metadata: %w", err)
	}
	return meta, nil
}

// uploadCount counts one upload of owner $1 on day $2.
const uploadCount = `INSERT INTO upload_counters (owner_id, day, count) VALUES ($1, $2, 1)
	ON CONFLICT (owner_id, day) DO UPDATE SET count = upload_counters.count + 1`

// uploadDay is the day an upload at now counts for.
func uploadDay(now time.Time) string { return now.UTC().Format("2006-01-02") }

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

// ingestOnce is the transactional path: it looks the original up, applies
// the daily limit and writes the record as rec asks.
func (s *FileStore) ingestOnce(ctx context.Context, rec docflow.IngestRecord) (*docflow.File, error) {
	f := rec.File
	var dupOf *docflow.File
	var id *int64
	if rec.ID != 0 {
		id = &rec.ID
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		dupOf = nil
		f.Status, f.DuplicateOf, f.TaskID = docflow.StatusPending, nil, ""
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
			if rec.DailyLimit > 0 {
				var n int
				err := tx.QueryRow(ctx, uploadCount+` WHERE upload_counters.count < $3 RETURNING count`,
					*f.OwnerID, uploadDay(now), rec.DailyLimit).Scan(&n)
				if errors.Is(err, pgx.ErrNoRows) {
					e := docflow.Errorf(docflow.ERATELIMIT, "Daily upload limit of %d reached", rec.DailyLimit)
					e.RetryAfter = secondsToMidnight(now)
					return e
				} else if err != nil {
					return fmt.Errorf("ingest: count upload: %w", err)
				}
			} else if _, err := tx.Exec(ctx, uploadCount, *f.OwnerID, uploadDay(now)); err != nil {
				return fmt.Errorf("ingest: count upload: %w", err)
			}
		}
		meta, err := metadataJSON(f)
		if err != nil {
			return err
		}
		// A duplicate gets neither run nor messages.
		pending := f.Status == docflow.StatusPending
		runID := ""
		if pending {
			runID = rec.RunID
		}
		err = tx.QueryRow(ctx, `INSERT INTO files (id, filehash, original_filename, stored_filename, file_size, mime_type,
			owner_id, pipeline_id, status, source, duplicate_of, original_blob, ai_metadata, task_id, created_at, updated_at)
			VALUES (COALESCE($1::bigint, nextval('files_id_seq')),$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$15)
			RETURNING id, created_at, updated_at`,
			id, f.FileHash, f.OriginalFilename, f.StoredFilename, f.FileSize, f.MimeType, f.OwnerID, f.PipelineID,
			f.Status, f.Source, f.DuplicateOf, f.OriginalBlob, meta, runID, now).Scan(&f.ID, &f.CreatedAt, &f.UpdatedAt)
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23503" {
				return docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
			}
			return fmt.Errorf("ingest: insert file: %w", err)
		}
		if runID != "" {
			if err := insertRun(ctx, tx, runID, f, rec.RunOptions, now); err != nil {
				return err
			}
			f.TaskID = runID
		}
		if pending {
			if err := Enqueue(ctx, tx, rec.Messages...); err != nil {
				return err
			}
		}
		if rec.Seen != nil {
			if _, err := tx.Exec(ctx, watchSeenInsert, watchSeenArgs(*rec.Seen, f.ID)...); err != nil {
				return fmt.Errorf("ingest: record watch seen: %w", err)
			}
		}
		if rec.Mail != nil {
			if _, err := tx.Exec(ctx, mailSeenInsert, mailSeenArgs(*rec.Mail, f.ID)...); err != nil {
				if e := mailSeenError(err); e != nil {
					return e
				}
				return fmt.Errorf("ingest: record mail seen: %w", err)
			}
		}
		if rec.Idempotency != nil {
			if _, err := tx.Exec(ctx, idempotencyFileUpdate, idempotencyFileArgs(*rec.Idempotency, f.ID, f.FileHash)...); err != nil {
				return fmt.Errorf("ingest: record idempotency key: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		f.ID, f.TaskID = 0, ""
		return nil, err
	}
	return dupOf, nil
}

// runInsert creates a pending run, with the arguments of runArgs.
const runInsert = `INSERT INTO runs (id, file_id, pipeline_id, status, options, created_at, updated_at)
	VALUES ($1, $2, $3, 'pending', $4, $5, $5)`

// runArgs are runInsert's arguments.
func runArgs(runID string, fileID int64, pipelineID *int64, opts map[string]any, now time.Time) ([]any, error) {
	if opts == nil {
		opts = map[string]any{}
	}
	o, err := json.Marshal(opts)
	if err != nil {
		return nil, fmt.Errorf("run options: %w", err)
	}
	return []any{runID, fileID, pipelineID, o, now}, nil
}

func insertRun(ctx context.Context, tx pgx.Tx, runID string, f *docflow.File, opts map[string]any, now time.Time) error {
	args, err := runArgs(runID, f.ID, f.PipelineID, opts, now)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, runInsert, args...); err != nil {
		return fmt.Errorf("insert run: %w", err)
	}
	return nil
}

func secondsToMidnight(now time.Time) int {
	u := now.UTC()
	next := time.Date(u.Year(), u.Month(), u.Day()+1, 0, 0, 0, 0, time.UTC)
	return int(next.Sub(u).Seconds()) + 1
}

// RequeueFiles creates a pending run for each item, points the file at it,
// sets it pending and enqueues the item's messages, all in one
// transaction. Files that vanished meanwhile are returned in missing (their
// messages are dropped).
func (s *FileStore) RequeueFiles(ctx context.Context, items []docflow.Requeue) (done []*docflow.File, missing []int64, err error) {
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
			out = append(out, it.Messages...)
			done = append(done, f)
		}
		return Enqueue(ctx, tx, out...)
	})
	if err != nil {
		return nil, nil, err
	}
	return done, missing, nil
}
