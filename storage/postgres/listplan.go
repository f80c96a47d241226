package postgres

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file chooses how a listing is answered (listPlan) from its filter
// alone, and writes the statements of each plan; listing.go runs them.
//
// The plans, in the order runListing tries them:
//   - visible: one user's listing by date and nothing else is read from
//     file_access (listvisible.go);
//   - sorted: a filtered listing whose total is not cached reads its
//     matches from the filter's own indexes (a search from the trigram
//     index first) and sorts them, counting them in the same statement;
//   - counted: otherwise the total is counted (or cached), and the page is
//     read by pageRead: sorted in memory, read directly, or skipped to
//     through the sort index, from a cached anchor on deep pages.

// listPlan is how a listing is answered, as far as its filter decides.
type listPlan struct {
	filter    docflow.FileFilter
	col       string // the sort column
	cmp       string // "<" or ">": how a keyset seek passes a sort key
	dir       string // DESC or ASC
	order     string // the ORDER BY list, ending with f.id
	per       int    // rows on a page
	offset    int    // rows before the page
	visible   bool   // try the file_access plan first
	where     string // fileWhere of the filter
	args      []any  // where's parameters
	key       string // the listing's cache key (where and args)
	sortFirst bool   // try the sorted plan while the total is not cached
	search    string // the search lower-cased, "" for none: the sorted plan starts from it
	// describe holds the query mode that plans a statement for its
	// actual parameters, for searches; nil for none.
	//
	// NOTE: a generic plan cannot know how selective a LIKE pattern is and
	// pairs the trigram index with the status/date index, reading tens of
	// thousands of entries; searches are planned for their actual pattern.
	describe []any
}

// planListing chooses the plan of filter. It reads nothing from the
// database.
func planListing(filter docflow.FileFilter) listPlan {
	p := listPlan{filter: filter, dir: "DESC", cmp: "<"}
	var ok bool
	if p.col, ok = sortColumns[filter.SortBy]; !ok {
		p.col = "f.created_at"
	}
	if strings.EqualFold(filter.SortOrder, "asc") {
		p.dir, p.cmp = "ASC", ">"
	}
	p.per = filter.PerPage
	if p.per <= 0 {
		p.per = 25
	}
	page := filter.Page
	if page <= 0 {
		page = 1
	}
	p.offset = (page - 1) * p.per
	if filter.Offset > 0 {
		p.offset = filter.Offset
	}
	p.visible = visibleOnly(filter, p.col) && p.offset+p.per <= maxSortInMemory
	p.where, p.args = fileWhere(filter)
	p.order = p.col + " " + p.dir
	if p.col != "f.id" {
		p.order += ", f.id " + p.dir
	}
	p.key = cacheKey(p.where, p.args)
	p.sortFirst = p.where != ""
	if filter.Search != "" {
		p.search = strings.ToLower(filter.Search)
		p.describe = []any{pgx.QueryExecModeCacheDescribe}
	}
	return p
}

// countKey is the cache key of the listing's total.
func (p listPlan) countKey() string { return "count\x00" + p.key }

// sortedQuery returns what the sorted plan reads: the statement selecting
// the matches, the condition on them, and their parameters. part is the
// part of the search the trigram index reads (nameIndex.choose); it is
// ignored without a search.
func (p listPlan) sortedQuery(part string) (matches, outer string, args []any) {
	if p.search == "" {
		return `SELECT ` + filterCols + ` FROM files f` + p.where, "", p.args
	}
	// The search alone picks the rows (from the trigram index), the
	// other conditions filter them: a plan that holds whatever the
	// pattern, so the statement's cached plan serves every search.
	// The index reads the part of the search its sample of names
	// says is cheapest (see nameIndex); the whole pattern is then
	// checked on the rows it returns.
	rest := p.filter
	rest.Search = ""
	matches = searchSource(rest, p.col) + ` WHERE ` + nameLike + `$1`
	if part != p.search {
		outer, args = rowsWhereAfter(rest, []any{likeContains(part), searchPattern(p.filter.Search)})
		outer = andWhere(`f.name_key LIKE $2`, outer)
	} else {
		outer, args = rowsWhereAfter(rest, []any{searchPattern(p.filter.Search)})
	}
	// NOTE: a pattern without a trigram would make the index read
	// all of itself (then every heap page); planned for its actual
	// pattern, the statement scans the table instead.
	if !hasTrigrams(p.search) {
		args = append(p.describe, args...)
	}
	return matches, outer, args
}

// inMemory reports whether a page of total matches is read by sorting
// them in memory: a selective filter, whose matches come from its own
// indexes.
func (p listPlan) inMemory(total int) bool { return total <= maxSortInMemory && p.where != "" }

// wantsAnchors reports whether a page of total matches is reached from a
// cached anchor: a deep page of a large listing not sorted in memory.
func (p listPlan) wantsAnchors(total int) bool {
	return !p.inMemory(total) && p.offset >= anchorStep && total >= countCacheMin
}

// pageRead is how the counted plan reads a page.
type pageRead struct {
	kind   int // listInMemory, listDirect or listSkip
	anchor int // the cached anchor the page is sought from, -1 for none
	offset int // rows skipped after the anchor (or from the start)
}

// pageRead chooses how a page of total matches is read, given how many
// anchors are cached for the listing (0 when wantsAnchors is false).
func (p listPlan) pageRead(total, anchors int) pageRead {
	rd := pageRead{anchor: -1, offset: p.offset}
	if p.wantsAnchors(total) {
		if i := p.offset/anchorStep - 1; i >= 0 && i < anchors {
			rd.anchor = i
			// The anchor row itself is row (i+1)*anchorStep (1-based), so
			// rows after it start at that offset.
			rd.offset -= (i + 1) * anchorStep
		}
	}
	switch {
	case p.inMemory(total):
		rd.kind = listInMemory
	case rd.offset <= maxDirectOffset:
		rd.kind = listDirect
	default:
		rd.kind = listSkip
	}
	return rd
}

// seek returns the listing's condition and parameters for the rows after
// anchor a.
func (p listPlan) seek(a anchor) (string, []any) {
	args := append([]any(nil), p.args...)
	n := len(args)
	seek := `f.id ` + p.cmp + ` $` + strconv.Itoa(n+1)
	if p.col != "f.id" {
		seek = `(` + p.col + `, f.id) ` + p.cmp + ` ($` + strconv.Itoa(n+1) + `, $` + strconv.Itoa(n+2) + `)`
		args = append(args, a.val)
	}
	args = append(args, a.id)
	return andWhere(seek, p.where), args
}

// pageText returns the statement of page read rd with the condition cond,
// selecting cols (with the run's summary when status is set).
func (p listPlan) pageText(rd pageRead, cond, cols string, status bool) string {
	var q string
	switch rd.kind {
	case listInMemory:
		// Selective filter: materialise the matches from the filter's
		// own indexes, then sort them; the planner would otherwise walk
		// the sort index and throw most rows away.
		q = `SELECT ` + cols + ` FROM files f JOIN (SELECT f.id FROM (SELECT ` + filterCols + ` FROM files f` + p.where +
			` OFFSET 0) f ORDER BY ` + p.order + limitClause(p.per, rd.offset) + `) pg ON pg.id = f.id ORDER BY ` + p.order
	case listDirect:
		// Page 1, or right after an anchor: read the rows in order.
		q = `SELECT ` + cols + ` FROM files f` + cond + ` ORDER BY ` + p.order + limitClause(p.per, rd.offset)
	default:
		// Skip through the sort index alone, then fetch the page's rows.
		q = `SELECT ` + cols + ` FROM files f JOIN (SELECT f.id FROM files f` + cond + ` ORDER BY ` + p.order +
			limitClause(p.per, rd.offset) + `) pg ON pg.id = f.id ORDER BY ` + p.order
	}
	if status {
		q = withRunStatus(q, p.order)
	}
	return q
}
