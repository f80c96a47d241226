package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ResetStore is the SQL of the system reset: which tables hold content
// (read from the schema, so a table added by a later migration is wiped
// without anyone listing it), their row counts, the wipe in one
// transaction, and the originals a reimport takes back.
type ResetStore struct {
	db *DB
	// destinationChanged encodes the message that tells a destination
	// integration's actor its integration changed (actors/destinations).
	// TRUNCATE fires no row trigger, so the wipe writes one per
	// destination it removes, as the trigger of migration 0600 would.
	destinationChanged func(id int64) (docflow.OutboxMessage, error)
}

// NewResetStore returns a ResetStore on db; destinationChanged encodes
// the "integration changed" message of the destinations topic.
func NewResetStore(db *DB, destinationChanged func(id int64) (docflow.OutboxMessage, error)) *ResetStore {
	if db == nil || destinationChanged == nil {
		panic("postgres: NewResetStore needs a DB and the destinations' message")
	}
	return &ResetStore{db: db, destinationChanged: destinationChanged}
}

// ResetKept are the tables a reset leaves as they are, and why: the
// schema's bookkeeping, the configuration, and the registrations of the
// processes running now. Every other table of the schema is content.
var ResetKept = map[string]string{
	"schema_migrations": "the migrations applied: the schema stays",
	"settings":          "the configuration administrators stored (database values above the environment)",
	"auth_mode":         "the authentication mode the HTTP processes last started in",
	"workers":           "the heartbeats of the pipeline processes running now",
	"source_workers":    "the processes sharing the IMAP sources now",
}

// resetPartial are content tables of which a reset keeps some rows: what
// an administrator needs to sign in again.
var resetPartial = map[string]string{
	"local_users": `DELETE FROM local_users WHERE NOT is_admin`,
}

// resetLock is the session advisory lock held for a whole reset, so that
// two resets (two administrators, two processes starting with
// FACTORY_RESET_ON_STARTUP) never interleave. 7_245_001…003 are the
// migrations', the owners' rules' and the blob sweep's.
const resetLock = 7_245_040

// TryLockReset takes the reset lock on a connection of its own, without
// waiting: ok is false while another reset runs. unlock releases it.
func (s *ResetStore) TryLockReset(ctx context.Context) (unlock func(), ok bool, err error) {
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("reset lock: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, resetLock).Scan(&ok); err != nil {
		conn.Conn().Close(context.Background()) //nolint:errcheck // ends the session and its lock
		conn.Release()
		return nil, false, fmt.Errorf("reset lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	return func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, resetLock); err != nil {
			conn.Conn().Close(uctx) //nolint:errcheck // the lock lives as long as the session
		}
		conn.Release()
	}, true, nil
}

// WipedTables returns the tables a reset empties, sorted: every ordinary
// or partitioned table of the current schema but the kept ones (the
// partially kept ones included).
func (s *ResetStore) WipedTables(ctx context.Context) ([]string, error) {
	return wipedTables(ctx, s.db.Pool)
}

func wipedTables(ctx context.Context, q querier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return slices.DeleteFunc(names, func(n string) bool { _, kept := ResetKept[n]; return kept }), nil
}

// Originals returns the originals a reimport takes back, by file id: one
// per stored content (a duplicate's content is its original's), with the
// name it was uploaded under.
func (s *ResetStore) Originals(ctx context.Context) ([]docflow.ResetOriginal, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT ON (original_blob) id, original_filename, original_blob
		FROM files WHERE original_blob <> '' AND status <> 'duplicate' AND duplicate_of IS NULL
		ORDER BY original_blob, id`)
	if err != nil {
		return nil, fmt.Errorf("reset originals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.ResetOriginal, error) {
		var o docflow.ResetOriginal
		err := r.Scan(&o.FileID, &o.Name, &o.Blob)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("reset originals: %w", err)
	}
	slices.SortFunc(out, func(a, b docflow.ResetOriginal) int { return int(a.FileID - b.FileID) })
	return out, nil
}

// resetLockTimeout bounds the wait for the tables' locks: a reset waits
// for the transactions under way to end, not for ever.
const resetLockTimeout = "30s"

// Wipe empties every content table in one transaction and returns the
// rows it removed from each (tables that held none included). Sequences
// go on where they were: a message still in flight names a file, run or
// integration id no new row will ever have, so it finds nothing rather
// than someone else's record. In the same transaction it keeps the local
// administrators, seeds what a fresh database holds (docflow_seed, the
// standard pipeline), writes w.Settings, tells the actor of each removed
// destination integration, and enqueues w.Messages after the outbox was
// emptied. EUNAVAILABLE when the tables stayed locked too long.
func (s *ResetStore) Wipe(ctx context.Context, w docflow.ResetWipe) (counts map[string]int64, err error) {
	defer mapDBError(&err)
	for key := range w.Settings {
		if d := catalogueDef(key); d == nil || d.Sensitive {
			return nil, fmt.Errorf("reset: setting %s cannot be written by a reset", key)
		}
	}
	// The ACCESS EXCLUSIVE locks are taken while steps and relays run:
	// PostgreSQL may pick the reset as a deadlock's victim (40P01), which
	// leaves nothing done, so the whole transaction is tried again.
	err = retryConflicts(ctx, wipeAttempts, func() error {
		var werr error
		counts, werr = s.wipeOnce(ctx, w)
		return werr
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// wipeAttempts bounds Wipe's tries after deadlocks.
const wipeAttempts = 5

// wipeOnce is one try of Wipe's transaction.
func (s *ResetStore) wipeOnce(ctx context.Context, w docflow.ResetWipe) (counts map[string]int64, err error) {
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		counts = map[string]int64{}
		tables, err := wipedTables(ctx, tx)
		if err != nil {
			return err
		}
		if len(tables) == 0 {
			return errors.New("reset: no tables to wipe")
		}
		var full []string
		for _, t := range tables {
			if _, ok := resetPartial[t]; !ok {
				full = append(full, t)
			}
		}
		idents := quoteAll(tables)
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+resetLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(idents, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("reset: lock tables: %w", err)
		}
		var parts []string
		for i, t := range full {
			parts = append(parts, fmt.Sprintf(`SELECT %d, count(*) FROM %s`, i, pgx.Identifier{t}.Sanitize()))
		}
		rows, err := tx.Query(ctx, strings.Join(parts, " UNION ALL "))
		if err != nil {
			return fmt.Errorf("reset: count rows: %w", err)
		}
		var i int
		var n int64
		if _, err := pgx.ForEachRow(rows, []any{&i, &n}, func() error { counts[full[i]] = n; return nil }); err != nil {
			return fmt.Errorf("reset: count rows: %w", err)
		}
		var destinations []int64
		if slices.Contains(full, "integrations") {
			rows, err := tx.Query(ctx, `SELECT id FROM integrations WHERE direction = 'DESTINATION' ORDER BY id`)
			if err != nil {
				return fmt.Errorf("reset: destinations: %w", err)
			}
			if destinations, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
				return fmt.Errorf("reset: destinations: %w", err)
			}
		}
		// NOTE: no CASCADE: a kept table referring to a wiped one makes
		// the statement fail instead of emptying the kept table too.
		// Tables without foreign keys either way are emptied one at a time
		// first: a TRUNCATE trigger (files empties file_names, migration
		// 0130) may not empty a table its own statement is emptying, and
		// tables linked by a foreign key must go in one statement.
		linked, err := linkedTables(ctx, tx)
		if err != nil {
			return err
		}
		var rest []string
		for _, t := range full {
			if linked[t] {
				rest = append(rest, t)
				continue
			}
			if _, err := tx.Exec(ctx, `TRUNCATE `+pgx.Identifier{t}.Sanitize()); err != nil {
				return fmt.Errorf("reset: truncate %s: %w", t, err)
			}
		}
		if len(rest) > 0 {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(quoteAll(rest), ", ")); err != nil {
				return fmt.Errorf("reset: truncate: %w", err)
			}
		}
		for _, t := range tables {
			if del, ok := resetPartial[t]; ok {
				tag, err := tx.Exec(ctx, del)
				if err != nil {
					return fmt.Errorf("reset: %s: %w", t, err)
				}
				counts[t] = tag.RowsAffected()
			}
		}
		if _, err := tx.Exec(ctx, `SELECT docflow_seed()`); err != nil {
			return fmt.Errorf("reset: seed: %w", err)
		}
		for _, key := range slices.Sorted(maps.Keys(w.Settings)) {
			if _, err := tx.Exec(ctx, `INSERT INTO settings (key, value, encrypted, updated_at) VALUES ($1, $2, FALSE, now())
				ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, encrypted = FALSE, updated_at = now()`, key, w.Settings[key]); err != nil {
				return fmt.Errorf("reset: setting %s: %w", key, err)
			}
		}
		msgs := slices.Clone(w.Messages)
		for _, id := range destinations {
			m, err := s.destinationChanged(id)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		return Enqueue(ctx, tx, msgs...)
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// linkedTables are the tables of the current schema that have a foreign
// key to another table or that another table's foreign key refers to.
func linkedTables(ctx context.Context, tx pgx.Tx) (map[string]bool, error) {
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_constraint k
		JOIN pg_class c ON c.oid IN (k.conrelid, k.confrelid) JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE k.contype = 'f' AND k.conrelid <> k.confrelid AND n.nspname = current_schema()
		GROUP BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("reset: foreign keys: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("reset: foreign keys: %w", err)
	}
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// catalogueDef is key's entry in the settings catalogue, nil when none.
func catalogueDef(key string) *docflow.SettingDef {
	for _, d := range docflow.Catalogue() {
		if d.Key == key {
			return &d
		}
	}
	return nil
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = pgx.Identifier{n}.Sanitize()
	}
	return out
}
