package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// The import of the original service's database (DocuElevate) into
// docflow's: each of its tables that docflow has an equivalent of is read
// in batches in id order and mapped row by row (legacy_map.go, the
// mappers). A batch is one transaction here: its rows, and a line per
// source row in legacy_import_rows (the id it got, or why it was not
// taken), so an interrupted import resumes after the last batch committed
// and takes no row twice. The schema is checked whole before anything is
// written: a database that is not the original's, or lacks a column the
// import needs, is refused with nothing written.

// legacyTable is one table of the original's schema that docflow takes.
type legacyTable struct {
	name     string   // the original's table
	required []string // columns the mapping needs (id always)
	optional []string // columns read when present (added by later versions)
	mapRow   legacyMapper
}

// legacyMapper maps one source row inside tx: the id the row got here,
// or 0 with the reason it was not taken; reason may also say what changed
// on the way for a row that was taken. An error fails the batch (a
// database error); a row docflow refuses is a reason, not an error.
type legacyMapper func(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error)

// legacyIgnored are the original's tables docflow has no equivalent of,
// with the reason the report gives (tables of neither list are reported
// as having no equivalent).
var legacyIgnored = map[string]string{
	"application_settings":  "settings are not imported (docflow's keys and encryption differ): set them again on /settings",
	"settings_audit_log":    "the original's settings history is not imported",
	"subscription_plans":    "docflow's subscription tiers are fixed (free, starter, professional, power)",
	"file_processing_steps": "the original's step states are not imported: imported files are finished",
	"documents":             "an early metadata table of the original, superseded by its files table",
	"alembic_version":       "",
}

// LegacyPlan is what an import of a source will take: the tables docflow
// maps with the columns present, and those it leaves.
type LegacyPlan struct {
	tables  []legacyTable
	columns map[string][]string
	// Unmapped lists the source's tables no row of which is imported.
	Unmapped []docflow.Unmapped
}

// PlanLegacyImport checks that src is the original service's database and
// that every table the import takes has the columns it needs; EINVALID
// says what is missing. Nothing is written.
func PlanLegacyImport(ctx context.Context, src docflow.LegacySource) (*LegacyPlan, error) {
	counts, err := src.Tables(ctx)
	if err != nil {
		return nil, err
	}
	present := map[string]int64{}
	names := make([]string, 0, len(counts))
	for _, c := range counts {
		present[strings.ToLower(c.Name)] = c.RowCount
		names = append(names, c.Name)
	}
	if _, ok := present["files"]; !ok {
		return nil, docflow.Errorf(docflow.EINVALID, "this is not the original service's database: it has no files table (tables found: %s)", listOrNone(names))
	}
	plan := &LegacyPlan{columns: map[string][]string{}}
	known := map[string]bool{}
	for _, t := range legacyTables() {
		known[t.name] = true
		if _, ok := present[t.name]; !ok {
			continue
		}
		cols, err := src.Columns(ctx, t.name)
		if err != nil {
			return nil, err
		}
		have := map[string]bool{}
		for _, c := range cols {
			have[c] = true
		}
		var missing []string
		for _, c := range append([]string{"id"}, t.required...) {
			if !have[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			what := "this is not the original service's database"
			if t.name != "files" {
				what = "this database is not in a version of the original's schema docflow knows"
			}
			return nil, docflow.Errorf(docflow.EINVALID, "%s: its %s table lacks %s", what, t.name, strings.Join(missing, ", "))
		}
		read := append([]string{"id"}, t.required...)
		for _, c := range t.optional {
			if have[c] {
				read = append(read, c)
			}
		}
		plan.tables = append(plan.tables, t)
		plan.columns[t.name] = read
	}
	sort.Strings(names)
	for _, n := range names {
		l := strings.ToLower(n)
		if known[l] {
			continue
		}
		reason, listed := legacyIgnored[l]
		if listed && reason == "" {
			continue
		}
		if !listed {
			reason = "no docflow equivalent"
		}
		if present[l] > 0 {
			plan.Unmapped = append(plan.Unmapped, docflow.Unmapped{Table: n, Rows: present[l], Reason: reason, WholeTable: true})
		}
	}
	return plan, nil
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) > 12 {
		return strings.Join(names[:12], ", ") + ", …"
	}
	return strings.Join(names, ", ")
}

// legacyImporter is one import's state: the source's key and the ids the
// source's rows got (legacy_import_rows), cached.
type legacyImporter struct {
	db        *DB
	sourceKey string
	cache     map[string]legacyID
	pending   map[string]legacyID
}

type legacyID struct {
	target int64
	reason string
}

// ImportLegacy imports src (PlanLegacyImport checked it; plan is its
// answer) into db, batch rows at a time, keeping each table's progress
// in job and calling save after every batch (a save error stops the
// import). sourceKey names the source in legacy_import_rows: rows already
// taken under it are passed over.
func (db *DB) ImportLegacy(ctx context.Context, src docflow.LegacySource, plan *LegacyPlan, sourceKey string, job *docflow.MigrationJob, batch int, save func() error) error {
	if batch <= 0 {
		batch = 500
	}
	im := &legacyImporter{db: db, sourceKey: sourceKey, cache: map[string]legacyID{}}
	counts, err := src.Tables(ctx)
	if err != nil {
		return err
	}
	count := map[string]int64{}
	for _, c := range counts {
		count[strings.ToLower(c.Name)] = c.RowCount
	}
	for _, t := range plan.tables {
		var taken int64
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM legacy_import_rows
			WHERE source_key = $1 AND source_table = $2 AND target_id IS NOT NULL`, sourceKey, t.name).Scan(&taken); err != nil {
			return err
		}
		p := job.Table(t.name)
		p.RowCount, p.RowsCopied, p.Done = count[t.name], taken, false
	}
	if err := im.report(ctx, plan, job); err != nil {
		return err
	}
	if err := save(); err != nil {
		return err
	}
	for _, t := range plan.tables {
		if err := im.importTable(ctx, src, t, plan.columns[t.name], job, batch, save); err != nil {
			return fmt.Errorf("import %s: %w", t.name, err)
		}
	}
	return nil
}

// importTable takes one table's rows after the last one taken.
func (im *legacyImporter) importTable(ctx context.Context, src docflow.LegacySource, t legacyTable, cols []string, job *docflow.MigrationJob, batch int, save func() error) error {
	var after int64
	if err := im.db.Pool.QueryRow(ctx, `SELECT coalesce(max(source_id), 0) FROM legacy_import_rows
		WHERE source_key = $1 AND source_table = $2`, im.sourceKey, t.name).Scan(&after); err != nil {
		return err
	}
	for {
		rows, err := src.Rows(ctx, t.name, cols, after, batch)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			job.Table(t.name).Done = true
			return save()
		}
		var taken int64
		im.pending = map[string]legacyID{}
		err = pgx.BeginFunc(ctx, im.db.Pool, func(tx pgx.Tx) error {
			taken = 0
			for _, r := range rows {
				id, ok := lint(r, "id")
				if !ok {
					continue
				}
				target, reason, err := im.mapOne(ctx, tx, t, r)
				if err != nil {
					return fmt.Errorf("row %d: %w", id, err)
				}
				var tid *int64
				if target != 0 {
					tid = &target
					taken++
				}
				if _, err := tx.Exec(ctx, `INSERT INTO legacy_import_rows (source_key, source_table, source_id, target_id, reason)
					VALUES ($1, $2, $3, $4, $5)`, im.sourceKey, t.name, id, tid, reason); err != nil {
					return err
				}
				im.pending[legacyKey(t.name, id)] = legacyID{target: target, reason: reason}
				after = max(after, id)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for k, v := range im.pending {
			im.cache[k] = v
		}
		if last, ok := lint(rows[len(rows)-1], "id"); ok {
			after = max(after, last)
		}
		p := job.Table(t.name)
		p.RowsCopied += taken
		if err := im.report(ctx, nil, job); err != nil {
			return err
		}
		if err := save(); err != nil {
			return err
		}
	}
}

// mapOne maps r under a savepoint: a row docflow's constraints refuse is
// rolled back alone and reported, and the batch goes on.
func (im *legacyImporter) mapOne(ctx context.Context, tx pgx.Tx, t legacyTable, r docflow.LegacyRow) (int64, string, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, "", err
	}
	target, reason, err := t.mapRow(ctx, sp, im, r)
	var pgErr *pgconn.PgError
	if err != nil && errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
		if rbErr := sp.Rollback(ctx); rbErr != nil {
			return 0, "", rbErr
		}
		return 0, "refused by docflow's schema: " + pgErr.Message, nil
	}
	if err != nil {
		sp.Rollback(ctx) //nolint:errcheck // the batch fails with err
		return 0, "", err
	}
	return target, reason, sp.Commit(ctx)
}

func legacyKey(table string, id int64) string { return fmt.Sprintf("%s/%d", table, id) }

// lookup returns the id the source row table/id got here (0 when it was
// not taken or not read yet) and the reason recorded with it.
func (im *legacyImporter) lookup(ctx context.Context, tx pgx.Tx, table string, id int64) (int64, string, error) {
	k := legacyKey(table, id)
	if v, ok := im.pending[k]; ok {
		return v.target, v.reason, nil
	}
	if v, ok := im.cache[k]; ok {
		return v.target, v.reason, nil
	}
	var target *int64
	var reason string
	err := tx.QueryRow(ctx, `SELECT target_id, reason FROM legacy_import_rows
		WHERE source_key = $1 AND source_table = $2 AND source_id = $3`, im.sourceKey, table, id).Scan(&target, &reason)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	v := legacyID{reason: reason}
	if target != nil {
		v.target = *target
	}
	im.cache[k] = v
	return v.target, v.reason, nil
}

// report puts the import's report in job: the plan's unmapped tables
// (plan nil: those job already lists with no row reason) and the reasons
// recorded for rows, by table.
func (im *legacyImporter) report(ctx context.Context, plan *LegacyPlan, job *docflow.MigrationJob) error {
	var tables []docflow.Unmapped
	if plan != nil {
		tables = plan.Unmapped
	} else {
		for _, u := range job.Unmapped {
			if u.WholeTable {
				tables = append(tables, u)
			}
		}
	}
	rows, err := im.db.Pool.Query(ctx, `SELECT source_table, reason, count(*) FROM legacy_import_rows
		WHERE source_key = $1 AND reason <> '' GROUP BY 1, 2 ORDER BY 1, 2`, im.sourceKey)
	if err != nil {
		return err
	}
	defer rows.Close()
	job.Unmapped = append([]docflow.Unmapped{}, tables...)
	var contents, more int64
	for rows.Next() {
		var u docflow.Unmapped
		if err := rows.Scan(&u.Table, &u.Reason, &u.Rows); err != nil {
			return err
		}
		if u.Table == LegacyContentsTable {
			// A line per file whose content did not come: past a hundred,
			// the rest are counted in one.
			if contents++; contents > legacyContentLines {
				more += u.Rows
				continue
			}
		}
		job.Unmapped = append(job.Unmapped, u)
	}
	if more > 0 {
		job.Unmapped = append(job.Unmapped, docflow.Unmapped{Table: LegacyContentsTable, Rows: more,
			Reason: "more files whose content did not come, for the same kinds of reasons as those above"})
	}
	return rows.Err()
}

// legacyContentLines is how many files whose content did not come the
// report names one by one.
const legacyContentLines = 100
