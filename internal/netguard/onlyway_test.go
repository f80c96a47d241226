package netguard

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyWayOut walks the module's Go sources (test files aside) and
// fails on any other way out than this package: a net.Dialer, net.Dial or
// net.DialTimeout, a tls.Dial or tls.Dialer, an http.Client or
// http.Transport of its own (a literal, new() or a variable of the type),
// http.DefaultClient, http.DefaultTransport or http.Get and its kin
// (which use them), fasthttp's clients and dials, or an ssrf.New guard
// (the address rule lives here alone). A connection a user aims (a URL, a
// host) must not be able to skip the rule, and a connection to an
// endpoint the operator configured takes the same Dialer with
// AllowPrivate, so that there is one copy of this code to review.
//
// Outside the rule, because nothing in them is aimed by a user:
//   - internal/testsupport, integrations/imap/imaptest and
//     analytics/analyticstest start and probe the real servers the tests
//     run against, on loopback, and e2e/e2etest is the test clients'
//     side of a server a test started; all are built only into tests;
//   - cmd/docflow-bench drives a process it started itself on loopback.
//
// The infrastructure clients the operator configures (pgx for
// PostgreSQL, kafka-go with its own kafka.Dialer, clickhouse-go,
// go-elasticsearch) connect through their libraries' own dialers to the
// addresses of the operator's settings (DATABASE_URL, KAFKA_BROKERS,
// CLICKHOUSE_URL, ELASTICSEARCH_URL), which no user can change; the rule
// still holds in the code that sets them up: none of it builds a
// net.Dialer or an HTTP transport of its own.
func TestOnlyWayOut(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not at %s: %v", root, err)
	}
	exempt := map[string]bool{
		"internal/netguard":          true,
		"internal/testsupport":       true,
		"integrations/imap/imaptest": true,
		"analytics/analyticstest":    true,
		"e2e/e2etest":                true,
		"cmd/docflow-bench":          true,
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules" || exempt[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, p := range waysOut(t, rel, src) {
			t.Errorf("%s: %s: connect through internal/netguard (Dialer, Client)", p.pos, p.what)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d source files found under %s", files, root)
	}
}

// A way out each of these snippets takes is found; the allowed uses are
// not.
func TestWaysOutFound(t *testing.T) {
	for src, want := range map[string]int{
		`import "net"; var d net.Dialer`:                                                  1,
		`import "net"; func f() { _, _ = net.Dial("tcp", "x:1") }`:                        1,
		`import n "net"; func f() { d := &n.Dialer{}; _ = d }`:                            1,
		`import "crypto/tls"; func f() { _, _ = tls.Dial("tcp", "x:1", nil) }`:            1,
		`import nethttp "net/http"; var c = &nethttp.Client{}`:                            1,
		`import "net/http"; var c http.Client`:                                            1,
		`import "net/http"; var t = new(http.Transport)`:                                  1,
		`import "net/http"; func f() { http.Get("http://x") }`:                            1,
		`import "net/http"; var c = http.DefaultClient`:                                   1,
		`import "code.dny.dev/ssrf"; var g = ssrf.New()`:                                  1,
		`import "github.com/valyala/fasthttp"; var c = &fasthttp.Client{}`:                1,
		`import "net/http"; func f(c *http.Client, r *http.Request) { c.Do(r) }`:          0,
		`import "net/http"; var t = http.Transport{}.Clone`:                               1,
		`import "net"; func f(c net.Conn) { _ = c.Close() }`:                              0,
		`import "net/http"; func f(c *http.Client) { _ = c.Transport.(*http.Transport) }`: 0,
	} {
		if got := len(waysOut(t, "x.go", []byte("package x; "+src))); got != want {
			t.Errorf("%s: %d found, want %d", src, got, want)
		}
	}
}

type wayOut struct {
	pos  token.Position
	what string
}

// forbidden names, by import path, whose every use is a way out.
var forbidden = map[string]map[string]bool{
	"net":                         {"Dialer": true, "Dial": true, "DialTimeout": true, "DialTCP": true, "DialUDP": true, "DialIP": true, "DialUnix": true},
	"crypto/tls":                  {"Dial": true, "DialWithDialer": true, "Dialer": true},
	"net/http":                    {"DefaultClient": true, "DefaultTransport": true, "Get": true, "Head": true, "Post": true, "PostForm": true},
	"code.dny.dev/ssrf":           {"New": true},
	"github.com/valyala/fasthttp": {"Dial": true, "DialTimeout": true, "DialDualStack": true, "DialDualStackTimeout": true, "Get": true, "GetTimeout": true, "GetDeadline": true, "Post": true, "Do": true, "DoTimeout": true, "DoDeadline": true, "DoRedirects": true, "TCPDialer": true},
}

// builtOnly are types whose values of our own making are a way out (a
// pointer to one handed in is not).
var builtOnly = map[string]map[string]bool{
	"net/http":                    {"Client": true, "Transport": true},
	"github.com/valyala/fasthttp": {"Client": true, "HostClient": true, "PipelineClient": true, "LBClient": true},
}

// waysOut lists the ways out in one file's source.
func waysOut(t *testing.T, name string, src []byte) []wayOut {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	imports := map[string]string{} // local name → path
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		local := path[strings.LastIndex(path, "/")+1:]
		if im.Name != nil {
			local = im.Name.Name
		}
		imports[local] = path
	}
	// ref returns the import path and name of a qualified identifier.
	ref := func(e ast.Expr) (string, string, bool) {
		sel, ok := e.(*ast.SelectorExpr)
		if !ok {
			return "", "", false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok {
			return "", "", false
		}
		path, ok := imports[x.Name]
		return path, sel.Sel.Name, ok
	}
	var out []wayOut
	report := func(n ast.Node, path, name string) {
		out = append(out, wayOut{pos: fset.Position(n.Pos()), what: path + "." + name})
	}
	built := func(n ast.Node, typ ast.Expr) {
		if path, name, ok := ref(typ); ok && builtOnly[path][name] {
			report(n, path, name)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if path, name, ok := ref(n); ok && forbidden[path][name] {
				report(n, path, name)
			}
		case *ast.CompositeLit:
			built(n, n.Type)
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "new" && len(n.Args) == 1 {
				built(n, n.Args[0])
			}
		case *ast.ValueSpec:
			if n.Type != nil {
				built(n, n.Type)
			}
		}
		return true
	})
	return out
}
