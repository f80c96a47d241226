package postgres

import (
	"strconv"
	"strings"

	"docflow"
)

// This file builds a listing's WHERE clause from a docflow.FileFilter.

// fileWhere builds the WHERE clause of a listing; every filter is ANDed.
func fileWhere(f docflow.FileFilter) (string, []any) { return fileWhereAfter(f, nil) }

// fileWhereAfter is fileWhere with its parameters numbered after args.
func fileWhereAfter(f docflow.FileFilter, args []any) (string, []any) {
	return buildWhere(f, args, false)
}

// rowsWhereAfter is fileWhereAfter for rows another condition has picked
// already (a search's matches): the visibility is checked on each row
// (its owner, or a share of it) rather than as a set of ids to join.
//
// NOTE: as a set, the planner joined it to the search's matches by a
// nested loop that read every file of the user again for each match
// whenever it guessed that the status and date filters left one match: a
// multi-user filtered listing went from milliseconds to 30 s once a user
// had 3,000 files (make soak).
func rowsWhereAfter(f docflow.FileFilter, args []any) (string, []any) {
	return buildWhere(f, args, true)
}

func buildWhere(f docflow.FileFilter, args []any, rows bool) (string, []any) {
	var conds []string
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if v := f.VisibleTo; v != nil && rows {
		var ors []string
		if v.UserID != "" {
			p := arg(v.UserID)
			ors = append(ors, `f.owner_id = `+p,
				`f.id IN (SELECT sh.file_id FROM shares sh WHERE sh.shared_with_user_id = `+p+`)`)
		}
		if v.Unclaimed {
			ors = append(ors, `f.owner_id IS NULL`)
		}
		if len(ors) == 0 {
			conds = append(conds, `false`)
		} else {
			conds = append(conds, `(`+strings.Join(ors, ` OR `)+`)`)
		}
	} else if v != nil {
		// NOTE: as an OR of the owner and an EXISTS over shares, the
		// condition could only be checked row by row, so a selective
		// listing read the whole table. As a set of ids, each part comes
		// from its index (unclaimed files from files_owner_created's NULL
		// entries).
		var sets []string
		if v.UserID != "" {
			p := arg(v.UserID)
			sets = append(sets, `SELECT fo.id FROM files fo WHERE fo.owner_id = `+p,
				`SELECT sh.file_id FROM shares sh WHERE sh.shared_with_user_id = `+p)
		}
		if v.Unclaimed {
			sets = append(sets, `SELECT fu.id FROM files fu WHERE fu.owner_id IS NULL`)
		}
		if len(sets) == 0 {
			conds = append(conds, `false`)
		} else {
			conds = append(conds, `f.id IN (`+strings.Join(sets, ` UNION ALL `)+`)`)
		}
	}
	if f.OwnerID != "" {
		conds = append(conds, `f.owner_id = `+arg(f.OwnerID))
	}
	if f.IDs != nil {
		conds = append(conds, `f.id = ANY(`+arg(f.IDs)+`)`)
	}
	if f.Search != "" {
		conds = append(conds, `f.id IN (SELECT n.id FROM file_names n WHERE `+nameLike+arg(searchPattern(f.Search))+`)`)
	}
	if f.Owner != "" {
		conds = append(conds, `f.owner_id = `+arg(f.Owner))
	}
	if f.SharedWith != "" {
		conds = append(conds, `f.id IN (SELECT sw.file_id FROM shares sw WHERE sw.shared_with_user_id = `+arg(f.SharedWith)+`)`)
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
