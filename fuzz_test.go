package docflow

import (
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// The fuzz targets of the root package's pure rules: routing rules,
// classification rules, setting values, analytics windows and stored file
// names. `go test` runs their seeds (f.Add and testdata/fuzz/FuzzXxx);
// scripts/fuzz.sh runs each for a bounded time (docs/testing.md).

// FuzzRoutingRule: ValidateRoutingRule and Matches never panic, whatever
// the rule and the input; a missing field matches only the negative
// operators; equals/not_equals and contains/not_contains answer
// opposite ways; a valid rule's value is within MaxRoutingValueLength; a
// value matches equals, contains and the regex quoting it.
func FuzzRoutingRule(f *testing.F) {
	f.Add("filename", "regex", `.*\.pdf`, "invoice.PDF", int64(10), "x")
	f.Add("metadata.vendor", "equals", "ACME", "a.pdf", int64(-1), "acme")
	f.Add("size", "gt", "1e3", "a", int64(2000), "")
	f.Add("file_type", "equals", ".pdf", "report.pdf", int64(0), "")
	f.Add("size", "lte", "NaN", "", int64(1), "")
	f.Add("category", "not_contains", "", "", int64(0), "")
	f.Add("filename", "regex", `\Qa`, "a", int64(0), "")
	f.Fuzz(func(t *testing.T, field, op, value, filename string, size int64, meta string) {
		r := &RoutingRule{Name: "r", Field: field, Operator: op, Value: value, TargetPipelineID: 1}
		valid := ValidateRoutingRule(r) == nil
		if valid && utf8.RuneCountInString(value) > MaxRoutingValueLength {
			t.Fatalf("a value of %d characters accepted", utf8.RuneCountInString(value))
		}
		in := RoutingInput{Filename: filename, Size: &size, Metadata: map[string]any{"vendor": meta, "tags": []any{meta, 1}}}
		if i := strings.LastIndexByte(filename, '.'); i >= 0 && i < len(filename)-1 {
			in.FileType = strings.ToLower(filename[i+1:])
		}
		got := r.Matches(in)
		v, present := in.field(field)
		if !present {
			if got != (op == "not_equals" || op == "not_contains") {
				t.Fatalf("%q %s %q on a missing field: %v", field, op, value, got)
			}
			return
		}
		opposite := map[string]string{"equals": "not_equals", "not_equals": "equals", "contains": "not_contains", "not_contains": "contains"}
		if o, ok := opposite[op]; ok {
			neg := *r
			neg.Operator = o
			if neg.Matches(in) == got {
				t.Fatalf("%q %s %q and %s both %v on %q", field, op, value, o, got, v)
			}
		}
		// The field's own value matches the rules naming it.
		for _, o := range []string{"equals", "contains", "regex"} {
			self := &RoutingRule{Name: "s", Field: field, Operator: o, Value: v, TargetPipelineID: 1}
			if o == "regex" {
				self.Value = regexp.QuoteMeta(v)
			}
			if ValidateRoutingRule(self) == nil && !self.Matches(in) {
				t.Fatalf("%q %s %q does not match its own value", field, o, self.Value)
			}
		}
	})
}

// FuzzClassificationRule: CheckClassificationRule never panics; a rule it
// accepts has a known type, a name and a category, a priority within
// bounds and a pattern its type can use (a regular expression that
// compiles, at least one keyword, field=value), no longer than
// MaxClassificationPattern; and the pattern check agrees with it.
func FuzzClassificationRule(f *testing.F) {
	f.Add("filename_pattern", "n", "invoice", `(?i)rechnung.*\.pdf`, 10)
	f.Add("content_keyword", "n", "c", " | |", 0)
	f.Add("metadata_match", "n", "c", "=x", 1000)
	f.Add("metadata_match", "n", "c", "vendor = ACME", 1001)
	f.Add("other", "", "", "", -1)
	f.Add("filename_pattern", "n", "c", "(a", 5)
	f.Fuzz(func(t *testing.T, typ, name, category, pattern string, priority int) {
		r := &ClassificationRule{RuleType: typ, Name: name, Category: category, Pattern: pattern, Priority: priority}
		err := CheckClassificationRule(r)
		problem := ClassificationPatternProblem(r)
		if err != nil {
			if c := ErrorCode(err); c != EINVALID && c != EBADREQUEST {
				t.Fatalf("%+v: %v (code %q)", r, err, c)
			}
			return
		}
		if problem != "" {
			t.Fatalf("%+v accepted, yet its pattern: %s", r, problem)
		}
		if strings.TrimSpace(name) == "" || strings.TrimSpace(category) == "" ||
			priority < ClassificationMinPriority || priority > ClassificationMaxPriority || len(pattern) > MaxClassificationPattern {
			t.Fatalf("%+v accepted", r)
		}
		switch typ {
		case RuleFilenamePattern:
			if _, err := regexp.Compile(pattern); err != nil {
				t.Fatalf("%q accepted: %v", pattern, err)
			}
		case RuleContentKeyword:
			for _, cs := range []bool{false, true} {
				ks := ClassificationKeywords(pattern, cs)
				if len(ks) == 0 {
					t.Fatalf("%q accepted without a keyword", pattern)
				}
				for _, k := range ks {
					if k == "" || strings.Contains(k, "|") || k != strings.TrimSpace(k) {
						t.Fatalf("%q: keyword %q", pattern, k)
					}
				}
			}
		case RuleMetadataMatch:
			if f, v, ok := SplitMetadataPattern(pattern); !ok || f == "" || v == "" {
				t.Fatalf("%q accepted: %q=%q", pattern, f, v)
			}
		default:
			t.Fatalf("rule type %q accepted", typ)
		}
	})
}

// FuzzSettingValue: for every setting of the catalogue, ValidateSettingValue
// never panics and answers EINVALID or nil; a value it accepts is one the
// setting's handle reads (not "not set", not the default in its place),
// unless it is blank (empty, or a list of empty items: not set); and a sensitive
// setting's message never quotes its value, nor a URL's password, path or
// query. The key is chosen by index; secret is placed in the value.
func FuzzSettingValue(f *testing.F) {
	for _, s := range []struct {
		i      uint
		v, sec string
	}{
		{0, "", ""}, {3, "42", ""}, {7, "true", ""}, {11, "1h30m", ""}, {20, "https://a.example/x", ""},
		{40, "0.5", ""}, {60, "a,b,,c", ""}, {90, " 7 ", ""},
		{1 << 20, "gotify://push.example.com/@SECRET@%zz", "Atoken123"},
		{1 << 20, "mysql://u:@SECRET@@db/docflow", "hunter22"},
		{1 << 20, "@SECRET@", "longsecretvalue"},
	} {
		f.Add(s.i, s.v, s.sec)
	}
	for _, d := range Catalogue() {
		f.Add(uint(0), d.Default, "")
	}
	f.Fuzz(func(t *testing.T, i uint, value, secret string) {
		var c catalogued
		if i >= 1<<20 {
			// The high indices are the sensitive settings, so that the
			// secret checks get their share of the inputs.
			var sens []catalogued
			for _, c := range catalogue {
				if c.def.Sensitive {
					sens = append(sens, c)
				}
			}
			c = sens[int(i-1<<20)%len(sens)]
		} else {
			c = catalogue[int(i%uint(len(catalogue)))]
		}
		def := c.def
		if len(secret) >= 6 && strings.Trim(secret, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == "" {
			value = strings.ReplaceAll(value, "@SECRET@", secret)
		} else {
			secret = ""
		}
		err := ValidateSettingValue(def, value)
		if err != nil {
			if ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), def.Key) {
				t.Fatalf("%s=%q: %v", def.Key, value, err)
			}
		} else if !blank(value) && !c.parses(value) {
			t.Fatalf("%s=%q accepted, but its handle does not read it", def.Key, value)
		}
		if !def.Sensitive || err == nil {
			return
		}
		msg := ErrorMessage(err)
		// What the message may show of a sensitive value: the scheme, the
		// user and the host of a URL; a part shown only because it is in
		// the value (not in the message's own words) is a leak.
		leaks := func(part string) bool {
			if len(part) < 6 || !strings.Contains(msg, part) {
				return false
			}
			other := strings.ReplaceAll(value, part, rot(part))
			return !strings.Contains(ErrorMessage(ValidateSettingValue(def, other)), part)
		}
		if !strings.Contains(value, "://") && leaks(value) {
			t.Fatalf("%s: message quotes the value: %s", def.Key, msg)
		}
		if secret != "" && leaks(secret) && secretHidden(value, secret) {
			t.Fatalf("%s=%q: message quotes %q: %s", def.Key, value, secret, msg)
		}
	})
}

// blank reports whether a value is empty, or a list of empty items: "not
// set", for which the handle gives the default (or nothing).
func blank(v string) bool {
	return strings.TrimFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) == ""
}

// secretHidden reports whether secret lies where a setting's message must
// not show it: anywhere in a value that is not a URL, or in a URL's
// password, path, query or fragment (after its user and host).
func secretHidden(value, secret string) bool {
	i := strings.Index(value, "://")
	if i < 0 {
		return true
	}
	for _, entry := range strings.Split(value, ",") {
		j := strings.Index(entry, "://")
		if j < 0 {
			if strings.Contains(entry, secret) {
				return true
			}
			continue
		}
		rest := entry[j+3:]
		// The user and host end at the first "/", "?" or "#"; an "@"
		// before that ends a user (and password) instead.
		end := strings.IndexAny(rest, "/?#")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if _, pass, ok := strings.Cut(auth[:at], ":"); ok && strings.Contains(pass, secret) {
				return true
			}
			auth = auth[at+1:]
		}
		if strings.Contains(rest[end:], secret) && !strings.Contains(auth, secret) && !strings.Contains(entry[:j], secret) {
			return true
		}
	}
	return false
}

// rot shifts every letter and digit of s, keeping its kind: a value
// equally (in)valid that no longer holds s.
func rot(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return 'a' + (r-'a'+13)%26
		case r >= 'A' && r <= 'Z':
			return 'A' + (r-'A'+13)%26
		case r >= '0' && r <= '9':
			return '0' + (r-'0'+5)%10
		}
		return r
	}, s)
}

// FuzzAnalyticsQuery: NewAnalyticsQuery never panics; a window it
// accepts has from ≤ to, an interval that is a positive multiple of a
// minute, at most AnalyticsMaxBuckets buckets of it, counted on the
// calendar (not on a time.Duration, which ends at 292 years), and
// buckets that hold their times.
func FuzzAnalyticsQuery(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), int64(1_800_000_000))
	f.Add(int64(1_700_000_000), int64(1_700_003_600), int64(60), int64(0))
	f.Add(int64(-62135596800), int64(253402300799), int64(300*86400), int64(0))
	f.Add(int64(1_700_000_000), int64(1_600_000_000), int64(90), int64(0))
	f.Fuzz(func(t *testing.T, from, to, intervalSec, now int64) {
		unix := func(s int64) time.Time {
			if s == 0 {
				return time.Time{}
			}
			return time.Unix(s, 0)
		}
		if intervalSec > 1<<40 || intervalSec < -(1<<40) {
			return // time.Duration's own range
		}
		q, err := NewAnalyticsQuery(unix(from), unix(to), time.Duration(intervalSec)*time.Second, time.Unix(now, 0))
		if err != nil {
			if ErrorCode(err) != EINVALID {
				t.Fatalf("%v", err)
			}
			return
		}
		if q.From.After(q.To) || q.Interval < AnalyticsMinInterval || q.Interval%AnalyticsMinInterval != 0 {
			t.Fatalf("accepted %+v", q)
		}
		sec := int64(q.Interval / time.Second)
		// Whole seconds: at most one bucket more than the exact count.
		if n := (q.To.Unix()-q.From.Unix())/sec + 1; n > AnalyticsMaxBuckets+1 {
			t.Fatalf("accepted %v to %v by %v: %d buckets", q.From, q.To, q.Interval, n)
		}
		for _, at := range []time.Time{q.From, q.To} {
			b := q.Bucket(at)
			if b.After(at) || !b.Add(q.Interval).After(at) {
				t.Fatalf("%v in bucket %v of %v", at, b, q.Interval)
			}
		}
	})
}

// FuzzCleanFilename: CleanFilename's name is a base name (no separator,
// no "..", no leading dot), without control or format characters, valid
// UTF-8 of at most 255 bytes, not a Windows device name, never empty;
// and a clean name comes back unchanged.
func FuzzCleanFilename(f *testing.F) {
	for _, s := range []string{"../../etc/passwd", `C:\x\..\y.pdf`, "invoice\u202Efdp.exe", "\uff0e\uff0e\uff0fa",
		"CON.txt", " . ", strings.Repeat("é", 200) + ".pdf", "a\xffb.pdf", "com¹.doc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := CleanFilename(in)
		if out == "" || len(out) > maxFilenameBytes || !utf8.ValidString(out) ||
			strings.ContainsAny(out, "/\\\x00") || strings.Contains(out, "..") || strings.HasPrefix(out, ".") {
			t.Fatalf("%q -> %q", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || strings.ContainsRune("\u202e\u200b\ufeff\uff0f\uff3c\uff0e", r) {
				t.Fatalf("%q -> %q holds %U", in, out, r)
			}
		}
		if stem, _, _ := strings.Cut(out, "."); WindowsDeviceName(strings.TrimSpace(stem)) {
			t.Fatalf("%q -> %q: a device name", in, out)
		}
		if again := CleanFilename(out); again != out {
			t.Fatalf("not stable: %q -> %q -> %q", in, out, again)
		}
	})
}
