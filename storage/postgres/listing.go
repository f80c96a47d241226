package postgres

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"docflow"
)

// This file is the listing engine: FindFiles and ListFiles, how they
// run their plan (listplan.go), and how they read a page's rows.

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
func (s *FileStore) FindFiles(ctx context.Context, filter docflow.FileFilter) ([]*docflow.File, int, error) {
	return listPage(ctx, s, filter, filePages(filter.WithProcessingStatus))
}

// FindFilesBrief appends one page of files to dst and returns it with
// the total, as FindFiles finds them, each record without what a list of
// documents does not show: the AI metadata (nil), the hash, the blob
// keys, the source and the storage providers are left empty, and the
// filter's WithProcessingStatus is ignored. A caller may reuse dst from
// one listing to the next.
//
// NOTE: the AI metadata is most of a record's bytes once a document is
// processed; reading and decoding it, and the columns beside it, made a
// page of 100 records cost half again what the REST listing's page does.
func (s *FileStore) FindFilesBrief(ctx context.Context, filter docflow.FileFilter, dst []docflow.File) ([]docflow.File, int, error) {
	r := briefPages
	r.dst = dst
	return listPage(ctx, s, filter, r)
}

// ListFiles returns one page of files as a listing shows them, with their
// current run's summary, and the total; as FindFiles otherwise.
func (s *FileStore) ListFiles(ctx context.Context, filter docflow.FileFilter, dst []docflow.FileListing) ([]docflow.FileListing, int, error) {
	r := summaryPages
	r.dst = dst
	return listPage(ctx, s, filter, r)
}

// listPage runs findPage once the list concurrency lets it.
func listPage[T any](ctx context.Context, s *FileStore, filter docflow.FileFilter, r pageReader[T]) ([]T, int, error) {
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
// times slower (docs/benchmarks.md, "Listings", has the tail latencies).
// The price: while the slots hold slow listings (a search without any
// trigram over millions of names), quick ones wait. A database on its
// own, bigger machine wants a higher limit.
func (s *FileStore) SetListConcurrency(n int) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	gate := make(chan struct{}, n)
	s.gate.Store(&gate)
}

// findPage is FindFiles and ListFiles, reading rows with r: it chooses
// the filter's plan and runs it.
func findPage[T any](ctx context.Context, s *FileStore, filter docflow.FileFilter, r pageReader[T]) ([]T, int, error) {
	return runListing(ctx, s, planListing(filter), r)
}

// runListing answers a listing by plan p, reading rows with r. Each
// step that finds no rows (the page is past the end, or nothing matches)
// leaves the answer to the next, which counts.
func runListing[T any](ctx context.Context, s *FileStore, p listPlan, r pageReader[T]) ([]T, int, error) {
	if p.visible {
		files, total, err := findVisible(ctx, s, r, p.filter.VisibleTo.UserID, p.dir, p.per, p.offset)
		if err != nil || len(files) > 0 {
			return files, total, err
		}
	}
	countKey := p.countKey()
	if p.sortFirst && !s.counts.has(countKey) {
		var part string
		if p.search != "" {
			part = s.names.choose(p.search)
		}
		matches, outer, args := p.sortedQuery(part)
		files, total, err := findSorted(ctx, s, r, p.col, p.order, matches, outer, args, p.per, p.offset)
		if err != nil {
			return nil, 0, err
		}
		if len(files) > 0 {
			if total >= countCacheMin {
				s.counts.put(countKey, total)
			}
			return files, total, nil
		}
	}
	v, err := s.counts.get(ctx, countKey, func(ctx context.Context) (any, error) {
		var n int
		if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FROM files f`+p.where, append(p.describe, p.args...)...).Scan(&n); err != nil {
			return nil, fmt.Errorf("count files: %w", err)
		}
		return n, nil
	}, func(v any) bool { return v.(int) >= countCacheMin })
	if err != nil {
		return nil, 0, err
	}
	total := v.(int)
	if p.offset >= total {
		if r.dst != nil {
			return r.dst, total, nil
		}
		return []T{}, total, nil
	}

	var anchors []anchor
	if p.wantsAnchors(total) {
		if anchors, err = s.anchors(ctx, p.key, p.col, p.order, p.where, p.args); err != nil {
			return nil, 0, err
		}
	}
	rd := p.pageRead(total, len(anchors))
	cond, args := p.where, p.args
	if rd.anchor >= 0 {
		cond, args = p.seek(anchors[rd.anchor])
	}
	text := listText{kind: rd.kind, where: cond, cols: r.cols, order: p.order, status: r.status, limit: p.per, offset: rd.offset}
	q := s.texts.get(text, func() string { return p.pageText(rd, cond, r.cols, r.status) })
	rows, err := s.db.Pool.Query(ctx, q, append(p.describe, args...)...)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	files, err := r.collect(rows, r.dst, p.per, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("find files: %w", err)
	}
	return files, total, nil
}

// limitClause writes a page's LIMIT and OFFSET into the statement rather
// than as parameters.
//
// NOTE: after five executions PostgreSQL may switch a prepared statement to
// a generic plan, which has to guess an unknown LIMIT (a tenth of the rows)
// and then prefers sorting the table to reading the sort index, several
// times the cost of a page. Both numbers are integers the handler
// validated, and few distinct pairs occur (the offset after an anchor is
// below anchorStep).
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
func findSorted[T any](ctx context.Context, s *FileStore, r pageReader[T], col, order, matches, outer string, args []any, limit, offset int) ([]T, int, error) {
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
func (s *FileStore) anchors(ctx context.Context, key, col, order, where string, args []any) ([]anchor, error) {
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

// briefPages reads the records FindFilesBrief returns (briefCols).
var briefPages = pageReader[docflow.File]{cols: briefCols, collect: collectBrief}

// collectBrief appends a page's rows to dst: briefCols, then the total
// when total is not nil. n is the most rows the query returns.
func collectBrief(rows pgx.Rows, dst []docflow.File, n int, total *int) ([]docflow.File, error) {
	defer rows.Close()
	var f docflow.File
	var status pgtype.DriverBytes
	dest := []any{&f.ID, &f.OriginalFilename, &f.FileSize, &f.MimeType, &f.CreatedAt, &f.UpdatedAt, &f.OwnerID,
		&f.PipelineID, &status, &f.DuplicateOf, &f.DocumentTitle, &f.OCRQualityScore, &f.Language, &f.TaskID}
	if total != nil {
		dest = append(dest, total)
	}
	page := slices.Grow(dst, n)
	for rows.Next() {
		f = docflow.File{}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		f.Status = statusString(status)
		page = append(page, f)
	}
	return page, rows.Err()
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
