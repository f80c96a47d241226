package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// Each filter gets its plan from the filter alone: whether the file_access
// plan is tried, whether the sorted plan is tried before counting and
// whether it starts from the search, and whether statements are planned
// for their actual parameters.
func TestPlanListingChoosesByFilter(t *testing.T) {
	t.Parallel()
	user := &docflow.Visibility{UserID: "u1"}
	day := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name                                  string
		filter                                docflow.FileFilter
		visible, sortFirst, search, described bool
		order                                 string
		per, offset                           int
	}{
		{name: "everything", filter: docflow.FileFilter{},
			order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "one user by date", filter: docflow.FileFilter{VisibleTo: user, Page: 3},
			visible: true, sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25, offset: 50},
		{name: "one user, oldest first", filter: docflow.FileFilter{VisibleTo: user, SortBy: "created_at", SortOrder: "ASC"},
			visible: true, sortFirst: true, order: "f.created_at ASC, f.id ASC", per: 25},
		{name: "one user, past what file_access serves", filter: docflow.FileFilter{VisibleTo: user, Page: 401},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25, offset: 10_000},
		{name: "one user, last page file_access serves", filter: docflow.FileFilter{VisibleTo: user, Page: 400},
			visible: true, sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25, offset: 9975},
		{name: "one user by name", filter: docflow.FileFilter{VisibleTo: user, SortBy: "original_filename"},
			sortFirst: true, order: "f.original_filename DESC, f.id DESC", per: 25},
		{name: "one user and unclaimed files", filter: docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: "u1", Unclaimed: true}},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "one user and a status", filter: docflow.FileFilter{VisibleTo: user, Status: "failed"},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "one user and a search", filter: docflow.FileFilter{VisibleTo: user, Search: "Invoice"},
			sortFirst: true, search: true, described: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "one user and dates", filter: docflow.FileFilter{VisibleTo: user, DateFrom: &day},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "a status", filter: docflow.FileFilter{Status: "completed", PerPage: 10, Page: 2},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 10, offset: 10},
		{name: "a search", filter: docflow.FileFilter{Search: "doc"},
			sortFirst: true, search: true, described: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "tags", filter: docflow.FileFilter{Tags: []string{"tax"}},
			sortFirst: true, order: "f.created_at DESC, f.id DESC", per: 25},
		{name: "by id", filter: docflow.FileFilter{SortBy: "id", SortOrder: "asc"},
			order: "f.id ASC", per: 25},
		{name: "unknown sort", filter: docflow.FileFilter{SortBy: "owner", SortOrder: "sideways"},
			order: "f.created_at DESC, f.id DESC", per: 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planListing(tc.filter)
			if p.visible != tc.visible || p.sortFirst != tc.sortFirst || (p.search != "") != tc.search || (p.describe != nil) != tc.described {
				t.Fatalf("visible %v, sorted first %v, search %q, described %v", p.visible, p.sortFirst, p.search, p.describe != nil)
			}
			if p.order != tc.order || p.per != tc.per || p.offset != tc.offset {
				t.Fatalf("order %q, %d rows after %d", p.order, p.per, p.offset)
			}
		})
	}
}

// Once the total is known, a page is sorted in memory when a filter
// matches few rows, read directly near the start or right after a cached
// anchor, and skipped to through the sort index otherwise.
func TestPlanListingReadsPageByTotal(t *testing.T) {
	t.Parallel()
	status := docflow.FileFilter{Status: "completed"}
	for _, tc := range []struct {
		name           string
		filter         docflow.FileFilter
		page, per      int
		total, anchors int
		wantsAnchors   bool
		want           pageRead
	}{
		{name: "first page of everything", page: 1, total: 100_000,
			want: pageRead{kind: listDirect, anchor: -1}},
		{name: "second page of a small table", page: 2, total: 3000,
			want: pageRead{kind: listDirect, anchor: -1, offset: 25}},
		{name: "deep page of a small table", page: 100, total: 3000,
			want: pageRead{kind: listSkip, anchor: -1, offset: 2475}},
		{name: "deep page from its anchor", page: 100, total: 100_000, anchors: 3999, wantsAnchors: true,
			want: pageRead{kind: listDirect, anchor: 98}},
		{name: "second page from the first anchor", page: 2, total: 100_000, anchors: 3999, wantsAnchors: true,
			want: pageRead{kind: listDirect, anchor: 0}},
		{name: "page size off the anchor step", page: 29, per: 10, total: 100_000, anchors: 3999, wantsAnchors: true,
			want: pageRead{kind: listDirect, anchor: 10, offset: 5}},
		{name: "anchors not cached that far", page: 100, total: 100_000, anchors: 50, wantsAnchors: true,
			want: pageRead{kind: listSkip, anchor: -1, offset: 2475}},
		{name: "selective filter", filter: status, page: 100, total: 9000,
			want: pageRead{kind: listInMemory, anchor: -1, offset: 2475}},
		{name: "selective filter, last in memory", filter: status, page: 1, total: maxSortInMemory,
			want: pageRead{kind: listInMemory, anchor: -1}},
		{name: "filter matching many", filter: status, page: 300, total: 50_000, anchors: 2000, wantsAnchors: true,
			want: pageRead{kind: listDirect, anchor: 298}},
		{name: "filter matching many, first page", filter: status, page: 1, total: 50_000,
			want: pageRead{kind: listDirect, anchor: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.filter
			f.Page, f.PerPage = tc.page, tc.per
			p := planListing(f)
			if got := p.wantsAnchors(tc.total); got != tc.wantsAnchors {
				t.Fatalf("wants anchors %v", got)
			}
			if got := p.pageRead(tc.total, tc.anchors); got != tc.want {
				t.Fatalf("page read %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A search reads the part of its pattern that the trigram index serves
// best and checks the whole pattern on what it returns; a pattern without
// a trigram is planned for its actual value.
func TestPlanListingSearchQuery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, search, part string
		args               []any
		outerPrefix        string
	}{
		{name: "whole pattern", search: "Invoice", part: "invoice",
			args: []any{"%invoice%"}, outerPrefix: ""},
		{name: "a rarer part", search: "big invoice", part: "invoice",
			args: []any{"%invoice%", "%big invoice%"}, outerPrefix: " WHERE f.name_key LIKE $2"},
		{name: "no trigram", search: "a_", part: "a_",
			args: []any{pgx.QueryExecModeCacheDescribe, `%a\_%`}, outerPrefix: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planListing(docflow.FileFilter{Search: tc.search})
			matches, outer, args := p.sortedQuery(tc.part)
			if matches != `SELECT `+nameCols+` FROM file_names n WHERE `+nameLike+`$1` {
				t.Fatalf("matches %q", matches)
			}
			if outer != tc.outerPrefix {
				t.Fatalf("outer %q", outer)
			}
			if len(args) != len(tc.args) {
				t.Fatalf("args %v", args)
			}
			for i := range args {
				if args[i] != tc.args[i] {
					t.Fatalf("args %v", args)
				}
			}
		})
	}
	// Without a search the sorted plan reads the filter's own matches.
	p := planListing(docflow.FileFilter{Status: "failed"})
	matches, outer, args := p.sortedQuery("")
	if matches != `SELECT `+filterCols+` FROM files f WHERE f.status = $1` || outer != "" || len(args) != 1 || args[0] != "failed" {
		t.Fatalf("sorted %q %q %v", matches, outer, args)
	}
}

// A search's matches are checked for visibility row by row (their owner,
// or a share of them), not joined to the set of every file the user may
// see: the planner joined that set by a nested loop that read the user's
// files again for each match.
func TestPlanListingSearchChecksVisibilityPerRow(t *testing.T) {
	t.Parallel()
	p := planListing(docflow.FileFilter{Search: "invoice", Status: "completed",
		VisibleTo: &docflow.Visibility{UserID: "ann", Unclaimed: true}})
	_, outer, args := p.sortedQuery("invoice")
	want := ` WHERE (f.owner_id = $2 OR f.id IN (SELECT sh.file_id FROM shares sh WHERE sh.shared_with_user_id = $2) OR f.owner_id IS NULL)`
	if !strings.HasPrefix(outer, want) || strings.Contains(outer, "UNION") {
		t.Fatalf("outer %q", outer)
	}
	if len(args) < 2 || args[1] != "ann" {
		t.Fatalf("args %v", args)
	}
	// Without a search, the visible files stay a set of ids, each part
	// from its index.
	where, _ := fileWhere(docflow.FileFilter{VisibleTo: &docflow.Visibility{UserID: "ann"}})
	if !strings.Contains(where, "UNION ALL") {
		t.Fatalf("where %q", where)
	}
}
