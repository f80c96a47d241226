package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// FileStore implements docflow.FileStore and the transactional
// intake writes (file + run + outbox in one transaction).
type FileStore struct {
	db     *DB
	counts *listCache
	waker  *outboxWaker
	names  *nameIndex
	gate   atomic.Pointer[chan struct{}]
	texts  listTexts
}

var _ docflow.FileStore = (*FileStore)(nil)

// NewFileStore returns a FileStore on db.
func NewFileStore(db *DB) *FileStore {
	if db == nil {
		panic("postgres: NewFileStore needs a DB")
	}
	s := &FileStore{db: db, counts: newListCache(db.Now), waker: &outboxWaker{db: db}, names: newNameIndex(db),
		texts: listTexts{m: map[listText]string{}}}
	s.SetListConcurrency(0)
	return s
}

// DropCaches forgets the listing totals and page anchors it cached (a
// system reset emptied the tables).
func (s *FileStore) DropCaches() { s.counts.purge() }

const fileCols = `f.id, f.filehash, f.original_filename, f.stored_filename, f.file_size, f.mime_type,
	f.created_at, f.updated_at, f.owner_id, f.pipeline_id, f.status, f.source, f.duplicate_of,
	f.original_blob, f.processed_blob, f.document_title, f.ocr_quality_score, f.ai_metadata,
	f.language, f.storage_providers, f.task_id`

// summaryCols are the columns ListFiles reads: what a listing shows, and
// the run the status summary looks up.
const summaryCols = `f.id, f.original_filename, f.file_size, f.mime_type, f.created_at, f.owner_id, f.status, f.task_id`

// briefCols are the columns FindFilesBrief reads: fileCols without the
// AI metadata, the hash, the blob keys, the source and the storage
// providers.
const briefCols = `f.id, f.original_filename, f.file_size, f.mime_type, f.created_at, f.updated_at, f.owner_id,
	f.pipeline_id, f.status, f.duplicate_of, f.document_title, f.ocr_quality_score, f.language, f.task_id`

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
func (s *FileStore) FindFileByID(ctx context.Context, id int64) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f WHERE f.id=$1`, id), true)
	if err != nil {
		return nil, notFound(err, "File not found")
	}
	return f, nil
}

// FindFileByStoredFilename returns the file stored under name (the
// stored_filename uploads answer with); ENOTFOUND if there is none.
func (s *FileStore) FindFileByStoredFilename(ctx context.Context, name string) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files f
		WHERE f.stored_filename=$1 ORDER BY f.id LIMIT 1`, name), false)
	if err != nil {
		return nil, notFound(err, "File not found")
	}
	return f, nil
}

// FindFileByHash returns the original (non-duplicate) file with that hash.
func (s *FileStore) FindFileByHash(ctx context.Context, hash string) (*docflow.File, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f
		WHERE f.filehash=$1 AND f.status <> 'duplicate' AND f.duplicate_of IS NULL ORDER BY f.id LIMIT 1`, hash), true)
	if err != nil {
		return nil, notFound(err, "File not found")
	}
	return f, nil
}

// FindFilesByIDs returns the existing files among ids, in id order.
func (s *FileStore) FindFilesByIDs(ctx context.Context, ids []int64) ([]*docflow.File, error) {
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
func (s *FileStore) UpdateFile(ctx context.Context, id int64, fn func(*docflow.File) error) (*docflow.File, error) {
	return s.EditFile(ctx, id, func(f *docflow.File) ([]docflow.OutboxMessage, error) { return nil, fn(f) })
}

// EditFile is UpdateFile whose fn also returns the outbox messages that
// announce the change (a person's metadata edit: document.updated), written
// in the same transaction. The search index hears of the change through
// the files_changed trigger (migration 0003), as for every change.
func (s *FileStore) EditFile(ctx context.Context, id int64, fn func(*docflow.File) ([]docflow.OutboxMessage, error)) (*docflow.File, error) {
	var out *docflow.File
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		f, err := scanFile(tx.QueryRow(ctx, `SELECT `+fileColsText+` FROM files f WHERE f.id=$1 FOR UPDATE`, id), true)
		if err != nil {
			return notFound(err, "File not found")
		}
		msgs, err := fn(f)
		if err != nil {
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
		if err := Enqueue(ctx, tx, msgs...); err != nil {
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
func (s *FileStore) DeleteFile(ctx context.Context, id int64) ([]string, error) {
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
func (s *FileStore) DeleteFiles(ctx context.Context, ids []int64) ([]int64, []string, error) {
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

// ProcessingStatuses summarises the current run of each file from its
// recorded steps, with the pipeline the run was routed to.
func (s *FileStore) ProcessingStatuses(ctx context.Context, files []*docflow.File) (map[int64]docflow.ProcessingStatus, error) {
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

// FindProcessingLogs returns the file's log chronologically.
func (s *FileStore) FindProcessingLogs(ctx context.Context, fileID int64) ([]*docflow.ProcessingLog, error) {
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

// PipelineExists reports whether a pipeline id exists.
func (s *FileStore) PipelineExists(ctx context.Context, id int64) (bool, error) {
	var ok bool
	if err := s.db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pipelines WHERE id=$1)`, id).Scan(&ok); err != nil {
		return false, fmt.Errorf("pipeline exists: %w", err)
	}
	return ok, nil
}

// CountUnfinishedRuns is the queue depth used to tighten upload limits.
func (s *FileStore) CountUnfinishedRuns(ctx context.Context) (int, error) {
	var n int
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE status IN ('pending', 'processing')`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished runs: %w", err)
	}
	return n, nil
}
