package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"docflow"
)

// FileService implements docflow.FileRepository and the transactional
// intake writes (file + run + outbox in one transaction).
type FileService struct {
	db     *DB
	counts *listCache
	waker  *outboxWaker
	names  *nameIndex
	gate   atomic.Pointer[chan struct{}]
	texts  listTexts
}

var _ docflow.FileRepository = (*FileService)(nil)

// NewFileService returns a FileService on db.
func NewFileService(db *DB) *FileService {
	if db == nil {
		panic("postgres: NewFileService needs a DB")
	}
	s := &FileService{db: db, counts: newListCache(db.Now), waker: &outboxWaker{db: db}, names: newNameIndex(db),
		texts: listTexts{m: map[listText]string{}}}
	s.SetListConcurrency(0)
	return s
}

const fileCols = `f.id, f.filehash, f.original_filename, f.stored_filename, f.file_size, f.mime_type,
	f.created_at, f.updated_at, f.owner_id, f.pipeline_id, f.status, f.source, f.duplicate_of,
	f.original_blob, f.processed_blob, f.document_title, f.ocr_quality_score, f.ai_metadata,
	f.language, f.storage_providers, f.task_id`

// summaryCols are the columns ListFiles reads: what a listing shows, and
// the run the status summary looks up.
const summaryCols = `f.id, f.original_filename, f.file_size, f.mime_type, f.created_at, f.owner_id, f.status, f.task_id`

// fileColsText adds the OCR text, which listings never need.
const fileColsText = fileCols + `, f.ocr_text`

// scanFile reads one row of fileCols (then ocr_text when withText, then
// extra destinations).
func scanFile(row pgx.Row, withText bool, extra ...any) (*docflow.File, error) {
	var f docflow.File
	var meta []byte
	dest := append(fileDest(&f, &meta, withText, len(extra)), extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if err := decodeMetadata(&f, meta); err != nil {
		return nil, err
	}
	return &f, nil
}

// fileDest are the scan destinations of fileCols (then ocr_text when
// withText) in f, the AI metadata's JSON in meta; n more may be appended
// without growing the slice.
func fileDest(f *docflow.File, meta *[]byte, withText bool, n int) []any {
	dest := make([]any, 0, 22+n)
	dest = append(dest, &f.ID, &f.FileHash, &f.OriginalFilename, &f.StoredFilename, &f.FileSize, &f.MimeType,
		&f.CreatedAt, &f.UpdatedAt, &f.OwnerID, &f.PipelineID, &f.Status, &f.Source, &f.DuplicateOf,
		&f.OriginalBlob, &f.ProcessedBlob, &f.DocumentTitle, &f.OCRQualityScore, meta,
		&f.Language, &f.StorageProviders, &f.TaskID)
	if withText {
		dest = append(dest, &f.OCRText)
	}
	return dest
}

// decodeMetadata sets f's AI metadata from its JSON (never nil).
func decodeMetadata(f *docflow.File, meta []byte) error {
	// Most records have no metadata yet: spare the decoder for "{}".
	if len(meta) > 0 && string(meta) != "{}" {
		if err := json.Unmarshal(meta, &f.AIMetadata); err != nil {
			return fmt.Errorf("file %d ai_metadata: %w", f.ID, err)
		}
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	return nil
}

// FindFileByID returns ENOTFOUND if the file does not exist.
func (s *FileService) FindFileByID(ctx context.Context, id int64) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f WHERE f.id=$1`, id), true)
	if err != nil {
		return nil, notFound(err, "File not found")
	}
	return f, nil
}

// FindFileByHash returns the original (non-duplicate) file with that hash.
func (s *FileService) FindFileByHash(ctx context.Context, hash string) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f
		WHERE f.filehash=$1 AND f.status <> 'duplicate' AND f.duplicate_of IS NULL ORDER BY f.id LIMIT 1`, hash), true)
	if err != nil {
		return nil, notFound(err, "File not found")
	}
	return f, nil
}

// FindFilesByIDs returns the existing files among ids, in id order.
func (s *FileService) FindFilesByIDs(ctx context.Context, ids []int64) ([]*docflow.File, error) {
	if len(ids) == 0 {
		return []*docflow.File{}, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+fileCols+` FROM files f WHERE f.id = ANY($1) ORDER BY f.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("find files by ids: %w", err)
	}
	files, err := collectPage(rows, len(ids), nil, false)
	if err != nil {
		return nil, fmt.Errorf("find files by ids: %w", err)
	}
	return files, nil
}

// UpdateFile runs fn on the locked file and saves the fields a client or a
// step may change (the tags column follows the AI metadata's by trigger,
// migration 0300). ENOTFOUND for a missing file or pipeline.
func (s *FileService) UpdateFile(ctx context.Context, id int64, fn func(*docflow.File) error) (*docflow.File, error) {
	var out *docflow.File
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		f, err := scanFile(tx.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f WHERE f.id=$1 FOR UPDATE`, id), true)
		if err != nil {
			return notFound(err, "File not found")
		}
		if err := fn(f); err != nil {
			return err
		}
		meta, err := json.Marshal(f.AIMetadata)
		if err != nil {
			return fmt.Errorf("update file %d: ai_metadata: %w", id, err)
		}
		f.UpdatedAt = s.db.Now()
		_, err = tx.Exec(ctx, `UPDATE files SET original_filename=$2, owner_id=$3, pipeline_id=$4, status=$5,
			duplicate_of=$6, processed_blob=$7, document_title=$8, ocr_text=$9, ocr_quality_score=$10,
			ai_metadata=$11, language=$12, storage_providers=$13, task_id=$14, updated_at=$15
			WHERE id=$1`, id, f.OriginalFilename, f.OwnerID, f.PipelineID, f.Status, f.DuplicateOf,
			f.ProcessedBlob, f.DocumentTitle, f.OCRText, f.OCRQualityScore, meta,
			f.Language, providers(f.StorageProviders), f.TaskID, f.UpdatedAt)
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23503" && strings.Contains(pgErr.ConstraintName, "pipeline") {
				return docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
			}
			return fmt.Errorf("update file %d: %w", id, err)
		}
		out = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// providers is a file's storage providers as the column takes them
// (never NULL).
func providers(p []string) []string {
	if p == nil {
		return []string{}
	}
	return p
}

// DeleteFile removes one record; see DeleteFiles.
func (s *FileService) DeleteFile(ctx context.Context, id int64) ([]string, error) {
	deleted, orphans, err := s.DeleteFiles(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	if len(deleted) == 0 {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "File not found")
	}
	return orphans, nil
}

// DeleteFiles removes the existing records among ids in one statement and
// returns the blob keys that no remaining record references.
func (s *FileService) DeleteFiles(ctx context.Context, ids []int64) ([]int64, []string, error) {
	if len(ids) == 0 {
		return []int64{}, nil, nil
	}
	var deleted []int64
	var orphans []string
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM files WHERE id = ANY($1)
			RETURNING id, original_blob, processed_blob, COALESCE(ai_metadata->>'metadata_sidecar', '')`, ids)
		if err != nil {
			return err
		}
		var blobs []string
		seen := map[string]bool{}
		for rows.Next() {
			var id int64
			var orig, proc, side string
			if err := rows.Scan(&id, &orig, &proc, &side); err != nil {
				rows.Close()
				return err
			}
			deleted = append(deleted, id)
			for _, b := range []string{orig, proc, side} {
				if b != "" && !seen[b] {
					seen[b] = true
					blobs = append(blobs, b)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(blobs) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT b FROM unnest($1::text[]) AS b WHERE NOT (`+blobUsed("b")+`)`, blobs)
		if err != nil {
			return err
		}
		orphans, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("delete files: %w", err)
	}
	if deleted == nil {
		deleted = []int64{}
	}
	slices.Sort(deleted)
	return deleted, orphans, nil
}

// blobUsed is the condition that a file references the blob key expr: as
// its original, its processed version or its metadata sidecar (each lookup
// on its own index). The tests that original_blob and processed_blob are
// not empty repeat the predicates of their partial indexes: without them
// the planner cannot use those indexes when expr is a column or a generic
// plan's parameter, and scans the table.
func blobUsed(expr string) string {
	return `(EXISTS (SELECT 1 FROM files WHERE original_blob <> '' AND original_blob = ` + expr + `)
	OR EXISTS (SELECT 1 FROM files WHERE processed_blob <> '' AND processed_blob = ` + expr + `)
	OR EXISTS (SELECT 1 FROM files WHERE ai_metadata ? 'metadata_sidecar' AND ai_metadata->>'metadata_sidecar' = ` + expr + `))`
}

// BlobInUse reports whether any file references key.
func (s *FileService) BlobInUse(ctx context.Context, key string) (bool, error) {
	used, err := s.BlobsInUse(ctx, []string{key})
	if err != nil {
		return false, err
	}
	return used[key], nil
}

var blobsInUseQuery = `SELECT b, ` + blobUsed("b") + ` FROM unnest($1::text[]) AS b`

// BlobsInUse reports, for each of keys, whether any file references it,
// in one statement (the blob sweep asks a few hundred keys at a time).
func (s *FileService) BlobsInUse(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, blobsInUseQuery, keys)
	if err != nil {
		return nil, fmt.Errorf("blobs in use: %w", err)
	}
	var key string
	var used bool
	_, err = pgx.ForEachRow(rows, []any{&key, &used}, func() error {
		out[key] = used
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blobs in use: %w", err)
	}
	return out, nil
}

// blobSweepLock is the session advisory lock key held while sweeping
// unreferenced blobs, so one process sweeps at a time (migrationLock is
// 7_245_001; 7245002 is the class of lockOwnerRules' two-key locks).
const blobSweepLock = 7_245_003

// TryLockBlobSweep takes the blob sweep's session advisory lock on a
// connection of its own, without waiting. ok is false when another session
// holds it. Otherwise the caller sweeps and then calls unlock, which
// releases the lock and the connection.
func (s *FileService) TryLockBlobSweep(ctx context.Context) (unlock func(), ok bool, err error) {
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("blob sweep lock: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, blobSweepLock).Scan(&ok); err != nil {
		// Whether the lock was taken is unknown: end the session, which
		// releases it if it was.
		conn.Conn().Close(context.Background()) //nolint:errcheck
		conn.Release()
		return nil, false, fmt.Errorf("blob sweep lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	unlock = func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, blobSweepLock); err != nil {
			// The lock lives as long as the session: end it rather than
			// hand the pool a connection that still holds the lock.
			conn.Conn().Close(uctx) //nolint:errcheck
		}
		conn.Release()
	}
	return unlock, true, nil
}

// ProcessingStatuses summarises the current run of each file from its
// recorded steps, with the pipeline the run was routed to.
func (s *FileService) ProcessingStatuses(ctx context.Context, files []*docflow.File) (map[int64]docflow.ProcessingStatus, error) {
	out := make(map[int64]docflow.ProcessingStatus, len(files))
	ids := make([]int64, 0, len(files))
	for _, f := range files {
		out[f.ID] = docflow.ProcessingStatus{Status: f.Status}
		if f.TaskID != "" {
			ids = append(ids, f.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT f.id, f.status`+runStatusCols+`, p.id, p.name FROM files f`+runStatusJoin+`
		LEFT JOIN runs r ON r.id = f.task_id LEFT JOIN pipelines p ON p.id = r.pipeline_id
		WHERE f.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("processing statuses: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var rs runStatus
		var pid *int64
		var pname *string
		if err := rows.Scan(append(append([]any{&id, &rs.file}, rs.dest()...), &pid, &pname)...); err != nil {
			return nil, fmt.Errorf("processing statuses: %w", err)
		}
		if _, ok := out[id]; ok {
			sum := rs.summary()
			sum.PipelineID, sum.PipelineName = pid, pname
			out[id] = sum
		}
	}
	return out, rows.Err()
}

// runStatusCols and runStatusJoin add the summary of a file's current run
// (its status, step count, whether a step failed, the last step that ran)
// to a query over files f, as the columns runStatus.dest reads.
const runStatusCols = `, COALESCE(rs.status, ''), COALESCE(rs.total, 0), COALESCE(rs.errors, FALSE), COALESCE(rs.last_step, '')`

// NOTE: LATERAL makes the run a lookup per listed row; as a plain join the
// planner would rather hash the whole runs table for a page of 25.
const runStatusJoin = ` LEFT JOIN LATERAL (
		SELECT r.status, st.total, st.errors, st.last_step
		FROM runs r CROSS JOIN LATERAL (
			SELECT count(*) AS total, bool_or(status = 'failed') AS errors,
			       (array_agg(step_type ORDER BY position DESC) FILTER (WHERE status <> 'queued'))[1] AS last_step
			FROM run_steps WHERE run_id = r.id) st
		WHERE r.id = f.task_id) rs ON TRUE`

// runStatus is one row's runStatusCols.
type runStatus struct {
	file, run, last string
	total           int
	errors          bool
}

func (rs *runStatus) dest() []any { return []any{&rs.run, &rs.total, &rs.errors, &rs.last} }

func (rs *runStatus) summary() docflow.ProcessingStatus {
	ps := docflow.ProcessingStatus{Status: rs.file, TotalSteps: rs.total, HasErrors: rs.errors, LastStep: rs.last}
	// NOTE: the file row is the source of truth, but a pipeline that only
	// advanced the run must still show progress: a pending file takes the
	// run's status when the run has moved on.
	if ps.Status == docflow.StatusPending && rs.run != "" && rs.run != docflow.StatusPending {
		ps.Status = rs.run
	}
	return ps
}

// withRunStatus wraps a page query (rows of fileCols, then extra columns)
// so that each row also carries runStatusCols, ordered as before.
func withRunStatus(q, order string) string {
	return `SELECT f.*` + runStatusCols + ` FROM (` + q + `) f` + runStatusJoin + ` ORDER BY ` + order
}

// pageReader is how a listing reads its rows into T: the columns it
// selects from files f, whether the current run's summary follows them
// (runStatusCols), and collect, which reads at most n rows, each then
// carrying the total when total is not nil.
type pageReader[T any] struct {
	cols    string
	status  bool
	collect func(rows pgx.Rows, dst []T, n int, total *int) ([]T, error)
	dst     []T // where collect appends the rows
}

// filePages reads whole records (fileCols), with their run's summary
// when status is set.
func filePages(status bool) pageReader[*docflow.File] {
	return pageReader[*docflow.File]{cols: fileCols, status: status, collect: func(rows pgx.Rows, _ []*docflow.File, n int, total *int) ([]*docflow.File, error) {
		return collectPage(rows, n, total, status)
	}}
}

// summaryPages reads what a listing shows (summaryCols) with the run's
// summary.
var summaryPages = pageReader[docflow.FileListing]{cols: summaryCols, status: true, collect: collectSummaries}

// collectPage reads a page's rows: fileCols, then the total when total is
// not nil, then the run status when status is set. n is the most rows the
// query returns (its LIMIT).
func collectPage(rows pgx.Rows, n int, total *int, status bool) ([]*docflow.File, error) {
	defer rows.Close()
	var f docflow.File
	var meta []byte
	var rs runStatus
	dest := fileDest(&f, &meta, false, 5)
	if total != nil {
		dest = append(dest, total)
	}
	if status {
		dest = append(dest, rs.dest()...)
	}
	page := make([]docflow.File, 0, n)
	var sums []docflow.ProcessingStatus
	if status {
		sums = make([]docflow.ProcessingStatus, 0, n)
	}
	for rows.Next() {
		f, meta = docflow.File{}, nil
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if err := decodeMetadata(&f, meta); err != nil {
			return nil, err
		}
		if status {
			rs.file = f.Status
			sums = append(sums, rs.summary())
		}
		page = append(page, f)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]*docflow.File, len(page))
	for i := range page {
		out[i] = &page[i]
		if status {
			out[i].Processing = &sums[i]
		}
	}
	return out, nil
}

// statusString is a file status read as bytes: one of the constant
// strings when it is a known status.
func statusString(b []byte) string {
	for _, st := range docflow.FileStatuses {
		if string(b) == st {
			return st
		}
	}
	return string(b)
}

// collectSummaries appends a page's rows to dst: summaryCols, then the
// total when total is not nil, then runStatusCols.
//
// NOTE: a listing is the service's most frequent request, and what it
// allocates sets how often the garbage collector runs, whose cycles show
// in every request's latency. So the rows are scanned through one set of
// destinations into an array of small records that the caller may reuse
// and the API encodes as they are; the run id is only looked at, and a
// file's status is one of a few constant strings. A listing of 25 files
// allocated 33 KB with *docflow.File records, 10 KB with a new array of
// these.
func collectSummaries(rows pgx.Rows, dst []docflow.FileListing, n int, total *int) ([]docflow.FileListing, error) {
	defer rows.Close()
	var f docflow.FileListing
	var status, task pgtype.DriverBytes
	var rs runStatus
	dest := []any{&f.ID, &f.OriginalFilename, &f.FileSize, &f.MimeType, &f.CreatedAt, &f.OwnerID, &status, &task}
	if total != nil {
		dest = append(dest, total)
	}
	dest = append(dest, rs.dest()...)
	page := slices.Grow(dst, n)
	for rows.Next() {
		f = docflow.FileListing{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		rs.file = statusString(status)
		f.Processing = rs.summary()
		page = append(page, f)
	}
	return page, rows.Err()
}

// FindProcessingLogs returns the file's log chronologically.
func (s *FileService) FindProcessingLogs(ctx context.Context, fileID int64) ([]*docflow.ProcessingLog, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, file_id, task_id, step_name, status, message, timestamp
		FROM processing_logs WHERE file_id=$1 ORDER BY timestamp, id`, fileID)
	if err != nil {
		return nil, fmt.Errorf("processing logs: %w", err)
	}
	defer rows.Close()
	out := []*docflow.ProcessingLog{}
	for rows.Next() {
		var l docflow.ProcessingLog
		if err := rows.Scan(&l.ID, &l.FileID, &l.TaskID, &l.StepName, &l.Status, &l.Message, &l.Timestamp); err != nil {
			return nil, fmt.Errorf("processing logs: %w", err)
		}
		out = append(out, &l)
	}
	return out, rows.Err()
}

// ClaimFiles gives the unclaimed files among ids to owner, deciding each
// by docflow.Authorize's claim rule under the rows' locks.
func (s *FileService) ClaimFiles(ctx context.Context, owner string, ids []int64) ([]int64, []docflow.ClaimSkip, error) {
	claimed := []int64{}
	skipped := []docflow.ClaimSkip{}
	claimant := &docflow.User{ID: owner}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		claimed, skipped = claimed[:0], skipped[:0]
		rows, err := tx.Query(ctx, `SELECT id, owner_id FROM files WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids)
		if err != nil {
			return err
		}
		owners := map[int64]*string{}
		for rows.Next() {
			var id int64
			var o *string
			if err := rows.Scan(&id, &o); err != nil {
				rows.Close()
				return err
			}
			owners[id] = o
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		seen := map[int64]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			o, ok := owners[id]
			if !ok {
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "not found"})
				continue
			}
			err := docflow.Authorize(claimant, &docflow.File{ID: id, OwnerID: o}, "", docflow.AccessClaim)
			switch {
			case docflow.ErrorCode(err) == docflow.EFORBIDDEN:
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "owned by another user"})
			case err != nil:
				return err
			case o != nil:
				skipped = append(skipped, docflow.ClaimSkip{FileID: id, Reason: "already owned by you"})
			default:
				claimed = append(claimed, id)
			}
		}
		if len(claimed) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `UPDATE files SET owner_id=$1, updated_at=$3 WHERE id = ANY($2)`, owner, claimed, s.db.Now())
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("claim files: %w", err)
	}
	return claimed, skipped, nil
}

// AssignOwner sets owner on ids, or on every unclaimed file when ids is nil.
func (s *FileService) AssignOwner(ctx context.Context, owner string, ids []int64) (int, error) {
	var tag pgconn.CommandTag
	var err error
	if ids == nil {
		tag, err = s.db.Pool.Exec(ctx, `UPDATE files SET owner_id=$1, updated_at=$2 WHERE owner_id IS NULL`, owner, s.db.Now())
	} else {
		tag, err = s.db.Pool.Exec(ctx, `UPDATE files SET owner_id=$1, updated_at=$3
			WHERE id = ANY($2) AND owner_id IS DISTINCT FROM $1`, owner, ids, s.db.Now())
	}
	if err != nil {
		return 0, fmt.Errorf("assign owner: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// ShareRole returns the role a share gives userID on the file ("" = none).
func (s *FileService) ShareRole(ctx context.Context, fileID int64, userID string) (string, error) {
	var role string
	err := s.db.Pool.QueryRow(ctx, `SELECT role FROM shares WHERE file_id=$1 AND shared_with_user_id=$2`, fileID, userID).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	} else if err != nil {
		return "", fmt.Errorf("share role: %w", err)
	}
	return role, nil
}

// PipelineExists reports whether a pipeline id exists.
func (s *FileService) PipelineExists(ctx context.Context, id int64) (bool, error) {
	var ok bool
	if err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pipelines WHERE id=$1)`, id).Scan(&ok); err != nil {
		return false, fmt.Errorf("pipeline exists: %w", err)
	}
	return ok, nil
}

// CountUnfinishedRuns is the queue depth used to tighten upload limits.
func (s *FileService) CountUnfinishedRuns(ctx context.Context) (int, error) {
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished runs: %w", err)
	}
	return n, nil
}

// listTTL bounds how stale a cached listing total or page anchor may be.
// NOTE: counting 100,000 rows costs more than the page itself, and so does
// skipping to page 4,000; a total or an anchor a second old is fine for a
// paginated list. Totals below countCacheMin are never cached (they are
// cheap and then always exact), so small lists see every change at once.
const listTTL = time.Second

// countCacheMin is the smallest total worth caching.
const countCacheMin = 5000

// anchorStep is the distance in rows between two cached page anchors. At
// the default page size every page starts right after an anchor, so a deep
// page is a keyset seek like page 1; other sizes skip fewer than
// anchorStep rows. One refresh reads the whole sort index either way.
const anchorStep = 25

type listEntry struct {
	val        any
	at         time.Time
	refreshing bool
	ready      chan struct{} // closed once val is first set
	err        error
}

// listRefreshTimeout bounds a background refresh of a cached value.
const listRefreshTimeout = 30 * time.Second

// listCache serves cached values. A missing value is computed by the first
// request that needs it while the others wait for it; a stale one is
// recomputed in the background while every request, the one that noticed
// included, keeps using the old value, so neither a burst nor the request
// that happens to arrive after the TTL pays for a recount.
type listCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*listEntry
}

func newListCache(now func() time.Time) *listCache {
	return &listCache{now: now, m: map[string]*listEntry{}}
}

// get returns the cached value of key, computing it when missing or stale.
// keep reports whether a computed value is worth caching. compute's context
// is ctx, or for a background refresh a detached one with a timeout.
func (c *listCache) get(ctx context.Context, key string, compute func(context.Context) (any, error), keep func(any) bool) (any, error) {
	c.mu.Lock()
	e, ok := c.m[key]
	switch {
	case ok && e.ready == nil && c.now().Sub(e.at) <= listTTL:
		c.mu.Unlock()
		return e.val, nil
	case ok && e.ready == nil && e.refreshing:
		c.mu.Unlock()
		return e.val, nil
	case ok && e.ready != nil:
		ready := e.ready
		c.mu.Unlock()
		<-ready
		if e.err != nil {
			return compute(ctx)
		}
		return e.val, nil
	case ok:
		e.refreshing = true
		old := e.val
		c.mu.Unlock()
		// The goroutine ends with its query (bounded by the timeout).
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listRefreshTimeout)
			defer cancel()
			v, err := compute(rctx)
			c.mu.Lock()
			defer c.mu.Unlock()
			e.refreshing = false
			switch {
			case err != nil:
				// Keep the old value; the next request past the TTL retries.
			case keep(v):
				e.val, e.at = v, c.now()
			case c.m[key] == e:
				delete(c.m, key)
			}
		}()
		return old, nil
	}
	if len(c.m) > 10_000 {
		clear(c.m)
	}
	e = &listEntry{ready: make(chan struct{})}
	c.m[key] = e
	c.mu.Unlock()
	v, err := compute(ctx)
	c.mu.Lock()
	e.val, e.err, e.at = v, err, c.now()
	close(e.ready)
	e.ready = nil
	if (err != nil || !keep(v)) && c.m[key] == e {
		delete(c.m, key)
	}
	c.mu.Unlock()
	return v, err
}

// has reports whether key holds a value, fresh or stale.
func (c *listCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return ok && e.ready == nil
}

// put stores v as the fresh value of key.
func (c *listCache) put(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && (e.ready != nil || e.refreshing) {
		return
	}
	if len(c.m) > 10_000 {
		clear(c.m)
	}
	c.m[key] = &listEntry{val: v, at: c.now()}
}

// countTTL bounds how stale a cached count may be (countCache users).
const countTTL = time.Second

type countEntry struct {
	n  int
	at time.Time
}

// countCache is a plain TTL cache of counts, shared by the repositories of
// this package.
type countCache struct {
	now func() time.Time
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]countEntry
}

func newCountCache(now func() time.Time, ttl time.Duration) *countCache {
	return &countCache{now: now, ttl: ttl, m: map[string]countEntry{}}
}

func (c *countCache) get(key string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	if !ok || c.now().Sub(e.at) > c.ttl {
		return 0, false
	}
	return e.n, true
}

func (c *countCache) put(key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) > 10_000 {
		clear(c.m)
	}
	c.m[key] = countEntry{n: n, at: c.now()}
}

func (c *countCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

func cacheKey(where string, args []any) string {
	var b strings.Builder
	b.WriteString(where)
	for _, a := range args {
		b.WriteString("\x00")
		fmt.Fprint(&b, a)
	}
	return b.String()
}

// fileWhere builds the WHERE clause of a listing; every filter is ANDed.
func fileWhere(f docflow.FileFilter) (string, []any) { return fileWhereAfter(f, nil) }

// fileWhereAfter is fileWhere with its parameters numbered after args.
func fileWhereAfter(f docflow.FileFilter, args []any) (string, []any) {
	var conds []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.VisibleTo != nil {
		p := arg(*f.VisibleTo)
		conds = append(conds, `(f.owner_id = `+p+` OR EXISTS (SELECT 1 FROM shares sh WHERE sh.file_id = f.id AND sh.shared_with_user_id = `+p+`))`)
	}
	if f.IDs != nil {
		conds = append(conds, `f.id = ANY(`+arg(f.IDs)+`)`)
	}
	if f.Search != "" {
		conds = append(conds, `f.id IN (SELECT n.id FROM file_names n WHERE `+nameLike+arg(searchPattern(f.Search))+`)`)
	}
	if f.MimeType != "" {
		conds = append(conds, `f.mime_type = `+arg(f.MimeType))
	}
	if f.Status != "" {
		conds = append(conds, `f.status = `+arg(f.Status))
	}
	if f.DateFrom != nil {
		conds = append(conds, `f.created_at >= `+arg(*f.DateFrom))
	}
	if f.DateTo != nil {
		conds = append(conds, `f.created_at < `+arg(f.DateTo.AddDate(0, 0, 1)))
	}
	if len(f.StorageProviders) > 0 {
		conds = append(conds, `f.storage_providers && `+arg(f.StorageProviders)+`::text[]`)
	}
	// NOTE: the tags column is the AI metadata's tags (migration 0300):
	// reading it alone lets the GIN index answer.
	if len(f.Tags) > 0 {
		conds = append(conds, `f.tags @> `+arg(f.Tags)+`::text[]`)
	}
	switch f.OCRQuality {
	case "poor":
		conds = append(conds, `f.ocr_quality_score < `+arg(f.QualityThreshold))
	case "good":
		conds = append(conds, `f.ocr_quality_score >= `+arg(f.QualityThreshold))
	case "unchecked":
		conds = append(conds, `f.ocr_quality_score IS NULL`)
	}
	if len(conds) == 0 {
		return "", args
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// nameLike is the filename search over file_names n (migration 0130),
// completed by its pattern parameter: name_key is lower(original_filename)
// in the C collation, under a trigram index.
const nameLike = `n.name_key LIKE `

// filterCols are the columns any filter of fileWhere (but the search) or
// any sort of sortColumns reads: a subquery that selects rows for them to
// filter and sort carries these rather than whole rows.
const filterCols = `f.id, f.original_filename, f.file_size, f.mime_type, f.owner_id, f.status,
	f.created_at, f.storage_providers, f.tags, f.ocr_quality_score`

// nameCols are the columns of file_names n, named as those of files.
const nameCols = `n.id, n.name_key, n.status, n.created_at, n.owner_id`

// searchSource selects the files whose name_key a search's pattern picks
// (completed by ` WHERE ` + nameLike), with name_key and the columns the
// rest of filter and the sort column col read: from file_names alone when
// it has them all (as for the status, date and visibility filters and the
// default sort), else joined with files.
func searchSource(filter docflow.FileFilter, col string) string {
	narrow := filter.MimeType == "" && len(filter.StorageProviders) == 0 && len(filter.Tags) == 0 && filter.OCRQuality == "" &&
		(col == "f.id" || col == "f.created_at")
	if narrow {
		return `SELECT ` + nameCols + ` FROM file_names n`
	}
	return `SELECT ` + filterCols + `, n.name_key FROM file_names n JOIN files f ON f.id = n.id`
}

func searchPattern(search string) string { return likeContains(strings.ToLower(search)) }

// likeContains is the LIKE pattern of the names containing s.
func likeContains(s string) string { return "%" + escapeLike(s) + "%" }

// andWhere adds cond to a WHERE clause of fileWhere ("" for none).
func andWhere(cond, where string) string {
	if where == "" {
		return " WHERE " + cond
	}
	return " WHERE " + cond + " AND " + strings.TrimPrefix(where, " WHERE ")
}

func escapeLike(s string) string { return likeEscaper.Replace(s) }

// likeEscaper is built once: building a Replacer costs more than using it.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

var sortColumns = map[string]string{
	"id": "f.id", "original_filename": "f.original_filename", "file_size": "f.file_size",
	"mime_type": "f.mime_type", "created_at": "f.created_at",
}

// anchor is the sort key of the row at a multiple of anchorStep.
type anchor struct {
	val any
	id  int64
}

// FindFiles returns one page of files and the total.
//
// NOTE: pages are addressed by number, so a page's first row is found by
// skipping rows. Three things keep that cheap at 100,000 records: the skip
// reads only the sort index (ids, no heap rows) and the full rows are
// fetched by id afterwards; for deep pages of large results a cached
// anchor (the sort key every anchorStep rows, refreshed at most once a
// second) turns the skip into a keyset seek plus fewer than anchorStep
// index entries, so page 4,000 costs what page 1 costs; and a
// selective filter (at most maxSortInMemory matches) is answered from its
// own index and sorted in memory rather than by walking the whole sort
// index and discarding what does not match. A filter not known to match
// many rows is tried that way first, and the same scan counts the matches
// (count(*) OVER ()), so a selective filter costs one scan and its total
// is always exact.
//
// At most the list concurrency (SetListConcurrency) of listings run at
// once; the others wait in arrival order.
func (s *FileService) FindFiles(ctx context.Context, filter docflow.FileFilter) ([]*docflow.File, int, error) {
	return listPage(ctx, s, filter, filePages(filter.WithProcessingStatus))
}

// ListFiles returns one page of files as a listing shows them, with their
// current run's summary, and the total; as FindFiles otherwise.
func (s *FileService) ListFiles(ctx context.Context, filter docflow.FileFilter, dst []docflow.FileListing) ([]docflow.FileListing, int, error) {
	r := summaryPages
	r.dst = dst
	return listPage(ctx, s, filter, r)
}

// listPage runs findPage once the list concurrency lets it.
func listPage[T any](ctx context.Context, s *FileService, filter docflow.FileFilter, r pageReader[T]) ([]T, int, error) {
	gate := s.gate.Load()
	select {
	case *gate <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	defer func() { <-*gate }()
	return findPage(ctx, s, filter, r)
}

// SetListConcurrency sets how many listings (FindFiles, ListFiles) this
// service runs in the database at once; n <= 0 means the number of cores.
// Listings already waiting keep the limit they found.
//
// NOTE: a listing is CPU work in PostgreSQL. Run more of them at once than
// there are cores and they share the cores, none finishing sooner in
// total, while the scheduler's time slices make the unlucky ones several
// times slower. 16 concurrent searches on two cores, PostgreSQL on the
// same machine: p99 3 times the median with no limit, 1.6 times with four
// at once, 1.4 times with two when a search cost 0.55 ms of PostgreSQL
// (p99 8.6–9 ms against 8.5–10.7 ms); at 0.48 ms two, three and four at
// once measure alike within the noise, and cheap listings alike at all.
// The price: while the slots hold slow listings (a search without any
// trigram over millions of names), quick ones wait. A database on its
// own, bigger machine wants a higher limit.
func (s *FileService) SetListConcurrency(n int) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	gate := make(chan struct{}, n)
	s.gate.Store(&gate)
}

// findPage is FindFiles and ListFiles, reading rows with r.
func findPage[T any](ctx context.Context, s *FileService, filter docflow.FileFilter, r pageReader[T]) ([]T, int, error) {
	col, ok := sortColumns[filter.SortBy]
	if !ok {
		col = "f.created_at"
	}
	dir, cmp := "DESC", "<"
	if strings.EqualFold(filter.SortOrder, "asc") {
		dir, cmp = "ASC", ">"
	}
	per := filter.PerPage
	if per <= 0 {
		per = 25
	}
	page := filter.Page
	if page <= 0 {
		page = 1
	}
	where, args := fileWhere(filter)
	order := col + " " + dir
	if col != "f.id" {
		order += ", f.id " + dir
	}
	key := cacheKey(where, args)
	// NOTE: a generic plan cannot know how selective a LIKE pattern is and
	// pairs the trigram index with the status/date index, reading tens of
	// thousands of entries; searches are planned for their actual pattern.
	var planArgs []any
	if filter.Search != "" {
		planArgs = []any{pgx.QueryExecModeCacheDescribe}
	}
	countKey := "count\x00" + key
	if where != "" && !s.counts.has(countKey) {
		src, inner, outer, sargs := `SELECT `+filterCols+` FROM files f`, where, "", args
		if filter.Search != "" {
			// The search alone picks the rows (from the trigram index), the
			// other conditions filter them: a plan that holds whatever the
			// pattern, so the statement's cached plan serves every search.
			// The index reads the part of the search its sample of names
			// says is cheapest (see nameIndex); the whole pattern is then
			// checked on the rows it returns.
			rest := filter
			rest.Search = ""
			src, inner = searchSource(rest, col), ` WHERE `+nameLike+`$1`
			search := strings.ToLower(filter.Search)
			if part := s.names.choose(search); part != search {
				outer, sargs = fileWhereAfter(rest, []any{likeContains(part), searchPattern(filter.Search)})
				outer = andWhere(`f.name_key LIKE $2`, outer)
			} else {
				outer, sargs = fileWhereAfter(rest, []any{searchPattern(filter.Search)})
			}
			// NOTE: a pattern without a trigram would make the index read
			// all of itself (then every heap page); planned for its actual
			// pattern, the statement scans the table instead.
			if !hasTrigrams(search) {
				sargs = append(planArgs, sargs...)
			}
		}
		files, total, err := findSorted(ctx, s, r, col, order, src+inner, outer, sargs, per, (page-1)*per)
		if err != nil {
			return nil, 0, err
		}
		if len(files) > 0 {
			if total >= countCacheMin {
				s.counts.put(countKey, total)
			}
			return files, total, nil
		}
		// Past the last page (or nothing matches): count below.
	}
	v, err := s.counts.get(ctx, countKey, func(ctx context.Context) (any, error) {
		var n int
		if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM files f`+where, append(planArgs, args...)...).Scan(&n); err != nil {
			return nil, fmt.Errorf("count files: %w", err)
		}
		return n, nil
	}, func(v any) bool { return v.(int) >= countCacheMin })
	if err != nil {
		return nil, 0, err
	}
	total := v.(int)
	offset := (page - 1) * per
	if offset >= total {
		if r.dst != nil {
			return r.dst, total, nil
		}
		return []T{}, total, nil
	}

	cond := where
	pageArgs := append([]any(nil), args...)
	inMemory := total <= maxSortInMemory && where != ""
	if !inMemory && offset >= anchorStep && total >= countCacheMin {
		anchors, err := s.anchors(ctx, key, col, order, where, args)
		if err != nil {
			return nil, 0, err
		}
		if i := offset/anchorStep - 1; i >= 0 && i < len(anchors) {
			a := anchors[i]
			n := len(pageArgs)
			seek := `f.id ` + cmp + ` $` + strconv.Itoa(n+1)
			if col != "f.id" {
				seek = `(` + col + `, f.id) ` + cmp + ` ($` + strconv.Itoa(n+1) + `, $` + strconv.Itoa(n+2) + `)`
				pageArgs = append(pageArgs, a.val)
			}
			pageArgs = append(pageArgs, a.id)
			cond = andWhere(seek, cond)
			// The anchor row itself is row (i+1)*anchorStep (1-based), so
			// rows after it start at that offset.
			offset -= (i + 1) * anchorStep
		}
	}
	cols := r.cols
	text := listText{cols: cols, order: order, status: r.status, limit: per, offset: offset}
	switch {
	case inMemory:
		text.kind, text.where = listInMemory, where
	case offset <= maxDirectOffset:
		text.kind, text.where = listDirect, cond
	default:
		text.kind, text.where = listSkip, cond
	}
	q := s.texts.get(text, func() string {
		var q string
		switch text.kind {
		case listInMemory:
			// Selective filter: materialise the matches from the filter's
			// own indexes, then sort them; the planner would otherwise walk
			// the sort index and throw most rows away.
			q = `SELECT ` + cols + ` FROM files f JOIN (SELECT f.id FROM (SELECT ` + filterCols + ` FROM files f` + where +
				` OFFSET 0) f ORDER BY ` + order + limitClause(per, offset) + `) pg ON pg.id = f.id ORDER BY ` + order
		case listDirect:
			// Page 1, or right after an anchor: read the rows in order.
			q = `SELECT ` + cols + ` FROM files f` + cond + ` ORDER BY ` + order + limitClause(per, offset)
		default:
			// Skip through the sort index alone, then fetch the page's rows.
			q = `SELECT ` + cols + ` FROM files f JOIN (SELECT f.id FROM files f` + cond + ` ORDER BY ` + order +
				limitClause(per, offset) + `) pg ON pg.id = f.id ORDER BY ` + order
		}
		if r.status {
			q = withRunStatus(q, order)
		}
		return q
	})
	rows, err := s.db.Pool.Query(ctx, q, append(planArgs, pageArgs...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	files, err := r.collect(rows, r.dst, per, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	return files, total, nil
}

// listTexts keeps the text of the listing statements built so far, by
// what they are built from: the same few are built again and again, and
// building them was a fifth of what a listing allocated.
type listTexts struct {
	mu sync.Mutex
	m  map[listText]string
}

// listText is what a listing statement is built from. order holds the
// sort column.
type listText struct {
	kind                     int
	from, where, order, cols string
	status                   bool
	limit, offset            int
}

// The kinds of listing statement.
const (
	listSorted = iota
	listInMemory
	listDirect
	listSkip
)

// maxListTexts bounds listTexts; it starts again empty when full.
const maxListTexts = 1024

// get returns the text of k, built by build the first time.
func (t *listTexts) get(k listText, build func() string) string {
	t.mu.Lock()
	q, ok := t.m[k]
	t.mu.Unlock()
	if ok {
		return q
	}
	q = build()
	t.mu.Lock()
	if len(t.m) >= maxListTexts {
		clear(t.m)
	}
	t.m[k] = q
	t.mu.Unlock()
	return q
}

// limitClause writes a page's LIMIT and OFFSET into the statement rather
// than as parameters.
//
// NOTE: after five executions PostgreSQL may switch a prepared statement to
// a generic plan, which has to guess an unknown LIMIT (a tenth of the rows)
// and then prefers sorting the table to reading the sort index: a page
// went from 0.14 to 1 ms of database CPU that way. Both numbers are
// integers the handler validated, and few distinct pairs occur (the
// offset after an anchor is below anchorStep).
func limitClause(limit, offset int) string {
	return ` LIMIT ` + strconv.Itoa(limit) + ` OFFSET ` + strconv.Itoa(offset)
}

// maxDirectOffset is the largest skip read through full rows rather than
// through the sort index alone (which then costs a join).
const maxDirectOffset = 100

// maxSortInMemory is the largest match count sorted in memory rather than
// read in order from the sort index.
const maxSortInMemory = 10_000

// findSorted reads the rows that the query matches selects (from the
// filter's own indexes; they carry the columns outer and the sort read, as
// those of files f), keeps those outer accepts, sorts them and returns one
// page with the number of matches. No rows means the offset is past the end (total
// then unknown, 0).
//
// NOTE: the matches (their ids and sort keys) are kept once, in a
// materialised CTE that both the count and the sort read. Counting them
// with a window (count(*) OVER ()) cost 10–20 % more of the whole
// statement, as the window stores every match and then evaluates itself
// on each.
func findSorted[T any](ctx context.Context, s *FileService, r pageReader[T], col, order, matches, outer string, args []any, limit, offset int) ([]T, int, error) {
	key := listText{kind: listSorted, from: matches, where: outer, order: order, cols: r.cols, status: r.status, limit: limit, offset: offset}
	q := s.texts.get(key, func() string {
		keys := `f.id`
		if col != "f.id" {
			keys += `, ` + col
		}
		q := `WITH m AS MATERIALIZED (SELECT ` + keys + ` FROM (` + matches + ` OFFSET 0) f` + outer + `)
		SELECT ` + r.cols + `, (SELECT count(*) FROM m) FROM files f JOIN (SELECT f.id FROM m f ORDER BY ` + order +
			limitClause(limit, offset) + `) pg ON pg.id = f.id ORDER BY ` + order
		if r.status {
			q = withRunStatus(q, order)
		}
		return q
	})
	rows, err := s.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	var total int
	out, err := r.collect(rows, r.dst, limit, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	return out, total, nil
}

// anchors returns the sort key of every anchorStep-th row (1-based rows
// anchorStep, 2·anchorStep, …) of a listing, cached like totals.
func (s *FileService) anchors(ctx context.Context, key, col, order, where string, args []any) ([]anchor, error) {
	v, err := s.counts.get(ctx, "anchors\x00"+col+order+"\x00"+key, func(ctx context.Context) (any, error) {
		rows, err := s.db.Pool.Query(ctx, `SELECT v, id FROM (SELECT `+col+` AS v, f.id, row_number() OVER (ORDER BY `+order+`) AS rn
			FROM files f`+where+`) a WHERE rn % `+strconv.Itoa(anchorStep)+` = 0 ORDER BY rn`, args...)
		if err != nil {
			return nil, fmt.Errorf("page anchors: %w", err)
		}
		defer rows.Close()
		var out []anchor
		for rows.Next() {
			var a anchor
			if err := rows.Scan(&a.val, &a.id); err != nil {
				return nil, fmt.Errorf("page anchors: %w", err)
			}
			out = append(out, a)
		}
		return out, rows.Err()
	}, func(any) bool { return true })
	if err != nil {
		return nil, err
	}
	return v.([]anchor), nil
}

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
