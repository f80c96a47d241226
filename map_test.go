package docflow

import (
	"bufio"
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The import map is the package table of ARCHITECTURE.md: its third column
// says what each package may import, and TestImportsFollowTheMap holds every
// production file (tests excluded) to it. See "Packages" in ARCHITECTURE.md
// for the column's words.

// mapFile is the page whose package table is the import map.
const mapFile = "ARCHITECTURE.md"

// mapHeader is the header row of the package table.
const mapHeader = "| package | holds | may import |"

// mapRow is one row of the package table: the packages it covers and what
// they may import.
type mapRow struct {
	line     int
	path     string // module-relative; "." for the root package
	subtree  bool   // written path/...: the package and every one below it
	anything bool   // "everything": every package of the module, every library no row keeps
	stdOnly  bool   // "standard library only"
	allow    []string
	libs     []string // library import paths (or prefixes) the row names
	column   string
}

// importMap is the parsed table.
type importMap struct {
	module string
	rows   []mapRow
	kept   map[string][]string // library prefix -> rows (paths) naming it
}

// parseMap reads the package table out of text. module is the module path.
func parseMap(module, text string) (*importMap, error) {
	m := &importMap{module: module, kept: map[string][]string{}}
	in := false
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !in {
			in = line == mapHeader
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("%s:%d: a row has three cells (package | holds | may import), this one %d", mapFile, n, len(cells))
		}
		row, err := parseRow(strings.TrimSpace(cells[0]), strings.TrimSpace(cells[2]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", mapFile, n, err)
		}
		row.line = n
		for _, l := range row.libs {
			m.kept[l] = append(m.kept[l], row.path)
		}
		m.rows = append(m.rows, row)
	}
	if len(m.rows) == 0 {
		return nil, fmt.Errorf("%s: no table under the header %q", mapFile, mapHeader)
	}
	return m, nil
}

// parseRow reads one row's package cell and may-import cell.
func parseRow(pkgCell, column string) (mapRow, error) {
	r := mapRow{column: column}
	// The package cell starts with the path in backquotes.
	if !strings.HasPrefix(pkgCell, "`") || strings.Count(pkgCell, "`") < 2 {
		return r, fmt.Errorf("the package cell %q does not start with a path in backquotes", pkgCell)
	}
	r.path = strings.SplitN(pkgCell[1:], "`", 2)[0]
	if p, ok := strings.CutSuffix(r.path, "/..."); ok {
		r.path, r.subtree = p, true
	}
	switch column {
	case "standard library only":
		r.stdOnly = true
		return r, nil
	case "—", "-":
		return r, nil
	}
	for _, tok := range strings.Split(column, ",") {
		tok = strings.Trim(strings.TrimSpace(tok), "`")
		switch {
		case tok == "everything":
			r.anything = true
		case tok == "":
			return r, fmt.Errorf("an empty entry in %q", column)
		case strings.ContainsAny(tok, " ()"):
			return r, fmt.Errorf("%q in %q is not a package: write root, a path such as streams or processing/..., or a library's import path", tok, column)
		case strings.Contains(strings.SplitN(tok, "/", 2)[0], "."):
			r.libs = append(r.libs, tok)
		default:
			r.allow = append(r.allow, tok)
		}
	}
	return r, nil
}

// rowFor returns the row covering pkg (module-relative, "." for the root):
// its own row, else the nearest row written path/... above it.
func (m *importMap) rowFor(pkg string) *mapRow {
	var best *mapRow
	for i := range m.rows {
		r := &m.rows[i]
		switch {
		case r.path == pkg:
			return r
		case r.subtree && (r.path == "." || strings.HasPrefix(pkg, r.path+"/")):
			if best == nil || len(r.path) > len(best.path) {
				best = r
			}
		}
	}
	return best
}

// allows reports whether an entry of a column (root, a path, path/...)
// admits the module-relative package dep.
func allows(entry, dep string) bool {
	if entry == "root" {
		return dep == "."
	}
	if p, ok := strings.CutSuffix(entry, "/..."); ok {
		return dep == p || strings.HasPrefix(dep, p+"/")
	}
	return dep == entry
}

func underPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// isStd reports whether an import path is the standard library's (or cgo's).
func isStd(path string) bool {
	first := strings.SplitN(path, "/", 2)[0]
	return !strings.Contains(first, ".")
}

// rel turns an import path of the module into a module-relative path.
func (m *importMap) rel(path string) (string, bool) {
	if path == m.module {
		return ".", true
	}
	if p, ok := strings.CutPrefix(path, m.module+"/"); ok {
		return p, true
	}
	return "", false
}

func show(pkg string) string {
	if pkg == "." {
		return "the root package"
	}
	return pkg
}

// check returns one line per import the map does not allow, and per row
// that names no package. pkgs maps each module-relative package to its
// imports, each with the file that has it.
func (m *importMap) check(pkgs map[string]map[string]string) []string {
	var bad []string
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, pkg := range names {
		row := m.rowFor(pkg)
		if row == nil {
			bad = append(bad, fmt.Sprintf("%s has no row in %s's package table: add one (| `%s` | what it holds | what it may import |)", show(pkg), mapFile, pkg))
			continue
		}
		deps := make([]string, 0, len(pkgs[pkg]))
		for d := range pkgs[pkg] {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, dep := range deps {
			file := pkgs[pkg][dep]
			if msg := m.verdict(row, pkg, dep); msg != "" {
				bad = append(bad, fmt.Sprintf("%s imports %s: %s", file, dep, msg))
			}
		}
	}
	// Every row and every entry names a package that exists.
	for _, r := range m.rows {
		found := false
		for _, p := range names {
			if p == r.path || (r.subtree && underPrefix(p, r.path)) || (r.subtree && r.path == ".") {
				found = true
				break
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("%s:%d: the row `%s` names no package with Go files (moved or removed? fix the row)", mapFile, r.line, r.path))
		}
		for _, a := range r.allow {
			if a == "root" {
				continue
			}
			if !slices.ContainsFunc(names, func(p string) bool { return allows(a, p) }) {
				bad = append(bad, fmt.Sprintf("%s:%d: the row `%s` allows %s, which is no package with Go files (moved or removed? fix the row)", mapFile, r.line, r.path, a))
			}
		}
	}
	return bad
}

// verdict explains why row's package pkg may not import dep, or returns "".
func (m *importMap) verdict(row *mapRow, pkg, dep string) string {
	rule := fmt.Sprintf("%s's row in %s (`%s`) says it may import %q", show(pkg), mapFile, rowName(row), row.column)
	if d, ok := m.rel(dep); ok {
		if row.anything || slices.ContainsFunc(row.allow, func(a string) bool { return allows(a, d) }) {
			return ""
		}
		return rule
	}
	if isStd(dep) {
		return ""
	}
	if row.stdOnly {
		return rule
	}
	for prefix, owners := range m.kept {
		if !underPrefix(dep, prefix) {
			continue
		}
		if slices.ContainsFunc(row.libs, func(l string) bool { return underPrefix(dep, l) }) {
			return ""
		}
		return fmt.Sprintf("%s keeps %s to %s; %s", mapFile, prefix, strings.Join(owners, ", "), rule)
	}
	return ""
}

func rowName(r *mapRow) string {
	if r.subtree {
		return r.path + "/..."
	}
	return r.path
}

// moduleImports parses every production Go file of the module under root
// (imports only) and returns, per module-relative package, its imports with
// the first file that has each. Test files, testdata, hidden folders and
// node_modules are left out, and so are files built only with the ignore tag.
func moduleImports(root string) (map[string]map[string]string, error) {
	pkgs := map[string]map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		for _, cg := range f.Comments {
			if cg.Pos() >= f.Package {
				break
			}
			for _, c := range cg.List {
				if expr, err := constraint.Parse(c.Text); err == nil && ignored(expr) {
					return nil
				}
			}
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(dir)
		if pkgs[pkg] == nil {
			pkgs[pkg] = map[string]string{}
		}
		rel, _ := filepath.Rel(root, path)
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if _, seen := pkgs[pkg][p]; !seen {
				pkgs[pkg][p] = filepath.ToSlash(rel)
			}
		}
		return nil
	})
	return pkgs, err
}

// ignored reports whether a build constraint excludes the file from every
// build (//go:build ignore and the like).
func ignored(expr constraint.Expr) bool {
	return !expr.Eval(func(tag string) bool { return tag != "ignore" })
}

func modulePath(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.TrimSpace(m)
		}
	}
	t.Fatal("go.mod names no module")
	return ""
}

// TestImportsFollowTheMap holds every production package to the "may
// import" column of ARCHITECTURE.md's package table: each package has a
// row, imports only the module's packages its row lists, and a library
// that some row names (kafka-go, pgx) only where a row names it; the root
// package imports the standard library only.
func TestImportsFollowTheMap(t *testing.T) {
	module := modulePath(t)
	text, err := os.ReadFile(mapFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseMap(module, string(text))
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := moduleImports(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range m.check(pkgs) {
		t.Error(line)
	}
}

// TestImportMapRules checks the checker on a small map: what it lets
// through, and that each refusal names the file, the import and the rule.
func TestImportMapRules(t *testing.T) {
	const text = "intro\n\n" + mapHeader + `
|---|---|---|
| ` + "`.`" + ` | the root | standard library only |
| ` + "`http`" + ` | the API | root, internal/netguard |
| ` + "`streams`" + ` | Kafka | root, github.com/segmentio/kafka-go |
| ` + "`processing/...`" + ` | steps | root, processing/... |
| ` + "`internal/app`" + ` | the builder | everything |
| ` + "`internal/netguard`" + ` | dialing | — |

after
`
	m, err := parseMap("docflow", text)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]map[string]string{
		".":                  {"strings": "a.go", "github.com/rs/zerolog": "a.go"},
		"http":               {"docflow": "http/s.go", "docflow/internal/netguard": "http/s.go", "docflow/processing/classify": "http/c.go", "github.com/segmentio/kafka-go": "http/k.go", "github.com/valyala/fasthttp": "http/s.go"},
		"streams":            {"docflow": "streams/t.go", "github.com/segmentio/kafka-go/protocol": "streams/t.go"},
		"processing/ocr":     {"docflow/processing/quality": "processing/ocr/o.go", "docflow/streams": "processing/ocr/x.go"},
		"processing/quality": {},
		"internal/app":       {"docflow/http": "internal/app/a.go", "github.com/segmentio/kafka-go": "internal/app/a.go"},
		"internal/netguard":  {"code.dny.dev/ssrf": "internal/netguard/n.go"},
		"intake":             {"docflow": "intake/i.go"},
	}
	got := m.check(pkgs)
	want := []string{
		"a.go imports github.com/rs/zerolog: the root package's row in ARCHITECTURE.md (`.`) says it may import \"standard library only\"",
		"http/c.go imports docflow/processing/classify: http's row in ARCHITECTURE.md (`http`) says it may import \"root, internal/netguard\"",
		"http/k.go imports github.com/segmentio/kafka-go: ARCHITECTURE.md keeps github.com/segmentio/kafka-go to streams; http's row in ARCHITECTURE.md (`http`) says it may import \"root, internal/netguard\"",
		"intake has no row in ARCHITECTURE.md's package table: add one (| `intake` | what it holds | what it may import |)",
		"internal/app/a.go imports github.com/segmentio/kafka-go: ARCHITECTURE.md keeps github.com/segmentio/kafka-go to streams; internal/app's row in ARCHITECTURE.md (`internal/app`) says it may import \"everything\"",
		"processing/ocr/x.go imports docflow/streams: processing/ocr's row in ARCHITECTURE.md (`processing/...`) says it may import \"root, processing/...\"",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A row whose package is gone, or which allows a package that is gone.
	delete(pkgs, "internal/netguard")
	got = m.check(pkgs)
	for _, w := range []string{
		"ARCHITECTURE.md:10: the row `internal/netguard` names no package with Go files",
		"ARCHITECTURE.md:6: the row `http` allows internal/netguard, which is no package with Go files",
	} {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no line starting %q in\n%s", w, strings.Join(got, "\n"))
		}
	}
}

// goFileName matches a Go file's name in a doc comment, not one named by
// a path (http/errors.go).
var goFileName = regexp.MustCompile(`(?:^|[^/\w.])([a-z0-9_]+\.go)\b`)

// TestDocIndexesEveryFile keeps the file indexes of the packages' doc.go
// true: a doc.go that names files of its own package (the root's indexes
// them by area) names every production file there, and only files that
// exist.
func TestDocIndexesEveryFile(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "doc.go" {
			return nil
		}
		checkDocIndex(t, filepath.Dir(path))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkDocIndex checks dir/doc.go's index of dir's files, when it has one.
func checkDocIndex(t *testing.T, dir string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		if !strings.HasSuffix(name, "_test.go") && name != "doc.go" {
			have[name] = true
		}
	}
	listed := map[string]bool{}
	own := 0
	for _, m := range goFileName.FindAllStringSubmatch(string(doc), -1) {
		if !listed[m[1]] && have[m[1]] {
			own++
		}
		listed[m[1]] = true
	}
	if own < 2 {
		return // no index of its files
	}
	for name := range have {
		if !listed[name] {
			t.Errorf("%s is not in %s's index of its files: add it (one line: what it holds)", filepath.Join(dir, name), filepath.Join(dir, "doc.go"))
		}
	}
	for name := range listed {
		if !have[name] && name != "doc.go" {
			t.Errorf("%s names %s, which is not a file of its package: fix the index", filepath.Join(dir, "doc.go"), name)
		}
	}
}
