package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// The contents of the files an import of the original service took: the
// wizard streams each into the blob store and records here, per file,
// the blobs its record points at and the outcome, in legacy_import_rows
// under LegacyContentsTable (target_id the file once every version the
// original recorded is in; NULL with the problems otherwise, so the next
// run tries it again). A version already attached is never copied again.

// LegacyContentsTable names the files' contents in legacy_import_rows
// and in an import's progress.
const LegacyContentsTable = "files (contents)"

// LegacyFileContent is where an imported file's content stands.
type LegacyFileContent struct {
	SourceID      int64
	FileID        int64
	FileHash      string
	OriginalBlob  string
	ProcessedBlob string
	// Done is true once every version the original recorded is attached.
	Done bool
}

// LegacyFileContents returns, for the source files among sourceIDs that
// the import under sourceKey took (and that docflow still has), where
// their content stands, by source id.
func (db *DB) LegacyFileContents(ctx context.Context, sourceKey string, sourceIDs []int64) (map[int64]LegacyFileContent, error) {
	rows, err := db.Pool.Query(ctx, `SELECT r.source_id, f.id, f.filehash, f.original_blob, f.processed_blob, c.target_id IS NOT NULL
		FROM legacy_import_rows r
		JOIN files f ON f.id = r.target_id
		LEFT JOIN legacy_import_rows c ON c.source_key = r.source_key AND c.source_table = $3 AND c.source_id = r.source_id
		WHERE r.source_key = $1 AND r.source_table = 'files' AND r.source_id = ANY($2)`, sourceKey, sourceIDs, LegacyContentsTable)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]LegacyFileContent{}
	for rows.Next() {
		var c LegacyFileContent
		if err := rows.Scan(&c.SourceID, &c.FileID, &c.FileHash, &c.OriginalBlob, &c.ProcessedBlob, &c.Done); err != nil {
			return nil, err
		}
		out[c.SourceID] = c
	}
	return out, rows.Err()
}

// AttachLegacyContent points file c.FileID at the blobs original and
// processed (each when not empty; an attached one stays) and records the
// outcome under sourceKey in one transaction: done without problems,
// or the problems, to be tried again by the next run.
func (db *DB) AttachLegacyContent(ctx context.Context, sourceKey string, c LegacyFileContent, original, processed, problems string) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if original != "" || processed != "" {
			if _, err := tx.Exec(ctx, `UPDATE files SET
					original_blob = CASE WHEN original_blob = '' THEN $2 ELSE original_blob END,
					processed_blob = CASE WHEN processed_blob = '' THEN $3 ELSE processed_blob END
				WHERE id = $1`, c.FileID, original, processed); err != nil {
				return err
			}
		}
		var target *int64
		if problems == "" {
			target = &c.FileID
		}
		_, err := tx.Exec(ctx, `INSERT INTO legacy_import_rows (source_key, source_table, source_id, target_id, reason)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (source_key, source_table, source_id) DO UPDATE SET target_id = EXCLUDED.target_id, reason = EXCLUDED.reason`,
			sourceKey, LegacyContentsTable, c.SourceID, target, problems)
		return err
	})
}

// LegacyContentProgress counts the files the import under sourceKey
// took that docflow still has, and those whose contents are all in.
func (db *DB) LegacyContentProgress(ctx context.Context, sourceKey string) (files, done int64, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT count(*), count(c.target_id)
		FROM legacy_import_rows r
		JOIN files f ON f.id = r.target_id
		LEFT JOIN legacy_import_rows c ON c.source_key = r.source_key AND c.source_table = $2 AND c.source_id = r.source_id
		WHERE r.source_key = $1 AND r.source_table = 'files'`, sourceKey, LegacyContentsTable).Scan(&files, &done)
	return files, done, err
}

// LegacyReport refreshes job's report of the import under sourceKey:
// the tables it lists as left out whole, and the reasons recorded for
// rows (the contents' problems among them).
func (db *DB) LegacyReport(ctx context.Context, sourceKey string, job *docflow.MigrationJob) error {
	im := &legacyImporter{db: db, sourceKey: sourceKey}
	return im.report(ctx, nil, job)
}
