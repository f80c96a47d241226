package postgres

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"docflow"
)

// The original service's values as docflow's columns take them. A SQLite
// file gives integers for booleans and text for timestamps (SQLAlchemy's
// "2006-01-02 15:04:05.000000", with or without an offset); its
// PostgreSQL database gives the native types. Each reader takes either.

// lstr is v as text ("" for NULL).
func lstr(r docflow.LegacyRow, col string) string {
	switch v := r[col].(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// lstrp is v as text, nil for NULL.
func lstrp(r docflow.LegacyRow, col string) *string {
	if r[col] == nil {
		return nil
	}
	s := lstr(r, col)
	return &s
}

// lint is v as an integer (0 for NULL or what is not one); ok is false then.
func lint(r docflow.LegacyRow, col string) (int64, bool) {
	switch v := r[col].(type) {
	case int64:
		return v, true
	case int32:
		return int64(v), true
	case int:
		return int64(v), true
	case float64:
		if v == math.Trunc(v) {
			return int64(v), true
		}
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	case string, []byte:
		n, err := strconv.ParseInt(strings.TrimSpace(lstr(r, col)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// lintp is v as an integer, nil for NULL or what is not one.
func lintp(r docflow.LegacyRow, col string) *int64 {
	if n, ok := lint(r, col); ok {
		return &n
	}
	return nil
}

// lfloat is v as a number; ok is false for NULL or what is not one.
func lfloat(r docflow.LegacyRow, col string) (float64, bool) {
	switch v := r[col].(type) {
	case float64:
		return v, true
	case float32:
		return float64(v), true
	case int64:
		return float64(v), true
	case int32:
		return float64(v), true
	case string, []byte:
		f, err := strconv.ParseFloat(strings.TrimSpace(lstr(r, col)), 64)
		return f, err == nil
	}
	return 0, false
}

// lbool is v as a boolean; def for NULL.
func lbool(r docflow.LegacyRow, col string, def bool) bool {
	switch v := r[col].(type) {
	case nil:
		return def
	case bool:
		return v
	case int64:
		return v != 0
	case string, []byte:
		switch strings.ToLower(strings.TrimSpace(lstr(r, col))) {
		case "1", "t", "true", "yes", "on":
			return true
		case "0", "f", "false", "no", "off", "":
			return false
		}
	}
	if n, ok := lint(r, col); ok {
		return n != 0
	}
	return def
}

// timeLayouts are the spellings of a timestamp the original's SQLite file
// may hold.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999 -0700 MST",
	"2006-01-02",
}

// ltime is v as a time (UTC when it carries no offset); nil for NULL or
// what does not parse.
func ltime(r docflow.LegacyRow, col string) *time.Time {
	switch v := r[col].(type) {
	case nil:
		return nil
	case time.Time:
		t := v.UTC()
		return &t
	case int64: // Unix seconds
		t := time.Unix(v, 0).UTC()
		return &t
	}
	s := strings.TrimSpace(lstr(r, col))
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	return nil
}

// ltimeOr is ltime, or def when it is nil.
func ltimeOr(r docflow.LegacyRow, col string, def time.Time) time.Time {
	if t := ltime(r, col); t != nil {
		return *t
	}
	return def
}

// ljsonObject is v (JSON text, or a decoded object) as an object; ok is
// false when it is neither (NULL is an empty object, ok).
func ljsonObject(r docflow.LegacyRow, col string) (map[string]any, bool) {
	switch v := r[col].(type) {
	case nil:
		return map[string]any{}, true
	case map[string]any:
		return v, true
	}
	s := strings.TrimSpace(lstr(r, col))
	if s == "" {
		return map[string]any{}, true
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil || m == nil {
		return map[string]any{}, false
	}
	return m, true
}

// ljsonStrings is v (a JSON array of strings, or a decoded one) as
// strings; ok is false when it is not one (NULL is none, ok).
func ljsonStrings(r docflow.LegacyRow, col string) ([]string, bool) {
	var list []any
	switch v := r[col].(type) {
	case nil:
		return []string{}, true
	case []any:
		list = v
	case []string:
		return v, true
	default:
		s := strings.TrimSpace(lstr(r, col))
		if s == "" {
			return []string{}, true
		}
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return []string{}, false
		}
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return []string{}, false
		}
		out = append(out, s)
	}
	return out, true
}
