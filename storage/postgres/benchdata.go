package postgres

// Fixtures and measurements for the benchmarks (cmd/docflow-bench): bulk
// seeding, database-clock timings and the backends serving a database.
// Nothing in the service calls these.

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// CreateBenchDatabase creates the database name on the server adminURL
// points at (its maintenance database) and returns a cleanup func that
// drops it, forcing its connections closed. name is used as written: the
// caller builds it from safe characters.
func CreateBenchDatabase(ctx context.Context, adminURL, name string) (func(), error) {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		return nil, err
	}
	return func() {
		admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
		admin.Close(context.Background())
	}, nil
}

// InsertBenchToken stores an API token owned by "bench" (made a local
// account) with the given
// prefix and hex SHA-256 hash in the database at dbURL, over a connection
// of its own (the caller holds no pool on that database).
func InsertBenchToken(ctx context.Context, dbURL, prefix, hash string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, benchOwnerSQL, "bench")
	if err == nil {
		_, err = conn.Exec(ctx, `INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash) VALUES ('bench', 'bench', $1, $2)`,
			prefix, hash)
	}
	conn.Close(ctx)
	return err
}

// benchOwnerSQL makes $1 an active local account that cannot sign in with
// a password (its hash is no hash): a token works only for someone who
// may sign in.
const benchOwnerSQL = `INSERT INTO local_users (email, username, password_hash) VALUES ($1, $1, '!') ON CONFLICT DO NOTHING`

// BackendPIDs returns the process ids of the PostgreSQL backends connected
// to this database, for reading their CPU time from /proc.
func (db *DB) BackendPIDs(ctx context.Context) ([]int32, error) {
	rows, err := db.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int32])
}

// SeedFiles inserts n file records in one statement, spread over 2024 and
// 2025 (one every 9 minutes from 2024-01-01), three in five completed, one
// failed and one pending, named invoice-<i>.pdf.
func (db *DB) SeedFiles(ctx context.Context, n int) error {
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, original_blob, created_at)
		SELECT md5(i::text) || md5((i+1)::text), 'invoice-' || i || '.pdf', md5(i::text) || '.pdf', 100000 + i, 'application/pdf',
		       (ARRAY['completed','completed','completed','failed','pending'])[1 + i % 5], '',
		       TIMESTAMPTZ '2024-01-01' + (i * interval '9 minutes')
		FROM generate_series(1, $1) AS i`, n)
	return err
}

// VacuumAnalyze vacuums and analyzes every table of the database.
func (db *DB) VacuumAnalyze(ctx context.Context) error {
	_, err := db.Pool.Exec(ctx, `VACUUM ANALYZE`)
	return err
}

// Checkpoint forces a checkpoint. It needs a superuser or pg_checkpoint;
// the caller may ignore its error and leave the write-back to PostgreSQL.
func (db *DB) Checkpoint(ctx context.Context) error {
	_, err := db.Pool.Exec(ctx, `CHECKPOINT`)
	return err
}

// InsertBenchFile records a completed PDF whose original is the blob key
// and returns its id.
func (db *DB) InsertBenchFile(ctx context.Context, key, name, stored string, size int64) (int64, error) {
	var id int64
	err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, original_blob)
			VALUES ($1, $2, $3, $4, 'application/pdf', 'completed', $1) RETURNING id`,
		key, name, stored, size).Scan(&id)
	return id, err
}

// SeedRuns records, in one transaction, a file per run id (hashes[i] is
// its hash, bench-<run>.pdf its name, the run id its task id) on pipeline
// pipelineID, a pending run for each, and the outbox messages message
// builds for them, as intake does. It returns the run ids in the order the
// files were inserted.
func (db *DB) SeedRuns(ctx context.Context, pipelineID int64, runIDs, hashes []string,
	message func(fileID int64, runID string) (docflow.OutboxMessage, error)) ([]string, error) {
	var out []string
	err := pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, pipeline_id, task_id)
				SELECT h, 'bench-' || r || '.pdf', r || '.pdf', 1000, 'application/pdf', $3, r
				FROM unnest($1::text[], $2::text[]) AS u(r, h) RETURNING id, task_id`, runIDs, hashes, pipelineID)
		if err != nil {
			return err
		}
		var msgs []docflow.OutboxMessage
		fileIDs := make([]int64, 0, len(runIDs))
		runs := make([]string, 0, len(runIDs))
		for rows.Next() {
			var id int64
			var run string
			if err := rows.Scan(&id, &run); err != nil {
				return err
			}
			fileIDs = append(fileIDs, id)
			runs = append(runs, run)
			m, err := message(id, run)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO runs (id, file_id, pipeline_id) SELECT r, f, $3 FROM unnest($1::text[], $2::bigint[]) AS u(r, f)`,
			runs, fileIDs, pipelineID); err != nil {
			return err
		}
		out = runs
		return Enqueue(ctx, tx, msgs...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RunOutcomes counts the completed and the failed runs among runs.
func (db *DB) RunOutcomes(ctx context.Context, runs []string) (completed, failed int, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed')
				FROM runs WHERE id = ANY($1)`, runs).Scan(&completed, &failed)
	return completed, failed, err
}

// RunsCompletedBy counts the runs among runs that completed at or before
// at, on the database's clock.
func (db *DB) RunsCompletedBy(ctx context.Context, runs []string, at time.Time) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = ANY($1) AND status = 'completed' AND finished_at <= $2`, runs, at).Scan(&n)
	return n, err
}

// CompletedRuns counts the completed runs among runs.
func (db *DB) CompletedRuns(ctx context.Context, runs []string) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = ANY($1) AND status='completed'`, runs).Scan(&n)
	return n, err
}

// RunLatencyMillis is a finished run's time from its creation (the intake
// commit) to its finish, in milliseconds, both on the database's clock.
func (db *DB) RunLatencyMillis(ctx context.Context, runID string) (float64, error) {
	var d float64
	err := db.Pool.QueryRow(ctx, `SELECT EXTRACT(EPOCH FROM finished_at - created_at) * 1000 FROM runs WHERE id=$1`, runID).Scan(&d)
	return d, err
}

// ClockTimestamp is the database's clock now (clock_timestamp(), not the
// transaction's start).
func (db *DB) ClockTimestamp(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := db.Pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t)
	return t, err
}

// RunsFinishedSince is the time from start (on the database's clock) to
// the last finish among runs.
func (db *DB) RunsFinishedSince(ctx context.Context, runs []string, start time.Time) (time.Duration, error) {
	var elapsed time.Duration
	err := db.Pool.QueryRow(ctx, `SELECT max(finished_at) - $2::timestamptz FROM runs WHERE id = ANY($1)`, runs, start).Scan(&elapsed)
	return elapsed, err
}

// CopyBenchRows bulk-loads rows into the columns cols of table with COPY.
func (db *DB) CopyBenchRows(ctx context.Context, table string, cols []string, rows [][]any) error {
	_, err := db.Pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(rows))
	return err
}

// SetFileIDSequence sets the files id sequence to n, so the next file
// recorded after a COPY with explicit ids gets n+1.
func (db *DB) SetFileIDSequence(ctx context.Context, n int) error {
	_, err := db.Pool.Exec(ctx, `SELECT setval('files_id_seq', $1)`, n)
	return err
}

// AnalyzeSearchTables refreshes the statistics of the tables the search
// API reads: files, file_embeddings and similarity_pairs.
func (db *DB) AnalyzeSearchTables(ctx context.Context) error {
	_, err := db.Pool.Exec(ctx, `ANALYZE files; ANALYZE file_embeddings; ANALYZE similarity_pairs`)
	return err
}

// SimilarityPairCount counts the stored similarity pairs.
func (db *DB) SimilarityPairCount(ctx context.Context) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM similarity_pairs`).Scan(&n)
	return n, err
}

// SharedListingUser is the user id of the sharing benchmark's user number
// k (SeedSharedListing).
func SharedListingUser(k int) string { return fmt.Sprintf("user-%03d", k) }

// SeedSharedListing inserts n file records owned round-robin by users
// users (file i by user i % users, named as SharedListingUser), spread
// over 2024 and 2025 like SeedFiles, and shares among them: of each
// owner's files, the first perUser (by i / users) go one each to another
// user, cycling through all the others, so that every user receives
// exactly perUser shares when perUser ≤ n/users and users ≥ 2. With n =
// 100,000, users = 100 and perUser = 500, each user sees 1,000 own files
// and 500 shared ones.
func (db *DB) SeedSharedListing(ctx context.Context, n, users, perUser int) error {
	return pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		var base int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(max(id), 0) FROM files`).Scan(&base); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO files (id, filehash, original_filename, stored_filename, file_size, mime_type, status, original_blob, created_at, owner_id)
			SELECT $3 + i + 1, md5('s' || i::text) || md5((i+1)::text), 'invoice-' || i || '.pdf', md5('s' || i::text) || '.pdf', 100000 + i, 'application/pdf',
			       (ARRAY['completed','completed','completed','failed','pending'])[1 + i % 5], '',
			       TIMESTAMPTZ '2024-01-01' + (i * interval '9 minutes'), 'user-' || lpad((i % $2)::text, 3, '0')
			FROM generate_series(0, $1 - 1) AS i`, n, users, base); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT setval('files_id_seq', $1)`, base+int64(n)); err != nil {
			return err
		}
		// File i: owner o = i % users, rank j = i / users; shared when
		// j < perUser, with user (o + 1 + j % (users-1)) % users.
		_, err := tx.Exec(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role)
			SELECT $4 + i + 1, 'user-' || lpad((i % $2)::text, 3, '0'),
			       'user-' || lpad(((i % $2 + 1 + (i / $2) % ($2 - 1)) % $2)::text, 3, '0'), 'viewer'
			FROM generate_series(0, $1 - 1) AS i WHERE i / $2 < $3`, n, users, perUser, base)
		return err
	})
}

// InsertBenchTokenFor stores an API token owned by owner (made a local
// account when it is none) with the given prefix and hex SHA-256 hash.
func (db *DB) InsertBenchTokenFor(ctx context.Context, owner, prefix, hash string) error {
	if _, err := db.Pool.Exec(ctx, benchOwnerSQL, owner); err != nil {
		return err
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash) VALUES ($1, 'bench', $2, $3)`,
		owner, prefix, hash)
	return err
}

// StepsLeftRunning counts the steps recorded as running and, of those,
// the ones whose lease belongs to a worker that still has its heartbeat
// row. A process that stops removes its own row, and a step whose
// worker has none may be claimed at once by another: held counts the
// steps a stopped process did not release.
func (db *DB) StepsLeftRunning(ctx context.Context) (running, held int, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM workers w WHERE w.id = rs.lease_owner))
		FROM run_steps rs WHERE rs.status = 'running'`).Scan(&running, &held)
	return running, held, err
}

// RunCounts counts the database's completed and failed runs.
func (db *DB) RunCounts(ctx context.Context) (completed, failed int, err error) {
	err = db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed') FROM runs`).Scan(&completed, &failed)
	return completed, failed, err
}
