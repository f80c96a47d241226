package docflow

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Every catalogue entry is a handle's: its key is unique, its type is one
// its handle reads, and its default is a value its handle reads (a setting
// without a default is a string, a list, or one whose consumer decides).
func TestHandlesAgreeWithCatalogue(t *testing.T) {
	if len(catalogue) == 0 {
		t.Fatal("no settings declared")
	}
	seen := map[string]bool{}
	for _, c := range catalogue {
		d := c.def
		if d.Key == "" || seen[d.Key] {
			t.Errorf("key %q empty or declared twice", d.Key)
		}
		seen[d.Key] = true
		if !slices.Contains(c.kinds, d.Type) {
			t.Errorf("%s: type %q, its handle reads %v", d.Key, d.Type, c.kinds)
		}
		if d.Default != "" && !c.parses(d.Default) {
			t.Errorf("%s: default %q is not a value of its handle's kind", d.Key, d.Default)
		}
		if d.Category == "" || !slices.Contains(SettingCategories, d.Category) || d.Description == "" {
			t.Errorf("%s: category %q or description missing", d.Key, d.Category)
		}
	}
	if got := len(Catalogue()); got != len(catalogue) {
		t.Fatalf("Catalogue has %d entries, %d declared", got, len(catalogue))
	}
}

// The catalogue lists the handles in the order settings_catalogue.go
// declares them, and every handle declared in the package is in it.
// Package initialisation adds the entries; an entry whose check read a
// package variable would wait for it and move.
func TestCatalogueOrder(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	ctors := map[string]bool{"stringSetting": true, "boolSetting": true, "intSetting": true, "int64Setting": true,
		"floatSetting": true, "listSetting": true, "secondsSetting": true, "durationSetting": true, "durationsSetting": true}
	var declared []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || !ctors[id.Name] || len(call.Args) != 1 {
				return true
			}
			if name != "settings_catalogue.go" {
				t.Errorf("%s declares a setting: declare them in settings_catalogue.go", fset.Position(call.Pos()))
			}
			lit, _ := call.Args[0].(*ast.CompositeLit)
			for _, e := range litElts(lit) {
				kv, ok := e.(*ast.KeyValueExpr)
				if id, isID := kv.Key.(*ast.Ident); ok && isID && id.Name == "Key" {
					if b, ok := kv.Value.(*ast.BasicLit); ok {
						k, _ := strconv.Unquote(b.Value)
						declared = append(declared, k)
					}
				}
			}
			return false
		})
	}
	var listed []string
	for _, d := range Catalogue() {
		listed = append(listed, d.Key)
	}
	if !slices.Equal(declared, listed) {
		t.Fatalf("declared:\n%v\nlisted:\n%v", declared, listed)
	}
}

func litElts(l *ast.CompositeLit) []ast.Expr {
	if l == nil {
		return nil
	}
	return l.Elts
}

// mapReader is a SettingsReader over a map (what a store without the
// catalogue defaults would answer).
type mapReader map[string]string

func (m mapReader) Get(key string) string { return m[key] }

// A handle reads the effective value as its kind, and its catalogue
// default when the value is not set or not of its kind.
func TestHandleGet(t *testing.T) {
	empty := mapReader{}
	if StepTimeout.Get(empty) != 600*time.Second || StepTimeout.Get(nil) != 600*time.Second {
		t.Fatalf("STEP_TIMEOUT default: %v", StepTimeout.Get(empty))
	}
	if StepTimeout.Get(mapReader{"STEP_TIMEOUT": " 30 "}) != 30*time.Second || StepTimeout.Get(mapReader{"STEP_TIMEOUT": "soon"}) != 600*time.Second {
		t.Fatal("STEP_TIMEOUT from a value")
	}
	if d := SSOAdminRecheck.Get(mapReader{"SSO_ADMIN_RECHECK": "90"}); d != 90*time.Second {
		t.Fatalf("SSO_ADMIN_RECHECK=90: %v", d)
	}
	if d := SSOAdminRecheck.Get(mapReader{"SSO_ADMIN_RECHECK": "1h30m"}); d != 90*time.Minute || SSOAdminRecheck.Get(empty) != 15*time.Minute {
		t.Fatalf("SSO_ADMIN_RECHECK: %v", d)
	}
	if d := StepRetryDelays.Get(empty); !slices.Equal(d, []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}) {
		t.Fatalf("STEP_RETRY_DELAYS default: %v", d)
	}
	if d := WebhookRetryDelays.Get(mapReader{"WEBHOOK_RETRY_DELAYS": " , "}); !slices.Equal(d, []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute}) {
		t.Fatalf("WEBHOOK_RETRY_DELAYS blank: %v", d)
	}
	if err := StepRetryDelays.Validate(mapReader{"STEP_RETRY_DELAYS": "1,x"}); ErrorCode(err) != EINVALID || !strings.Contains(ErrorMessage(err), "STEP_RETRY_DELAYS") {
		t.Fatalf("bad STEP_RETRY_DELAYS: %v", err)
	}
	if !RateLimitingEnabled.Get(empty) || RateLimitingEnabled.Get(mapReader{"RATE_LIMITING_ENABLED": "off"}) {
		t.Fatal("RATE_LIMITING_ENABLED")
	}
	if _, ok := SessionCookieSecure.Lookup(empty); ok {
		t.Fatal("SESSION_COOKIE_SECURE without a value is set")
	}
	if v, ok := SessionCookieSecure.Lookup(mapReader{"SESSION_COOKIE_SECURE": "yes"}); !v || !ok {
		t.Fatal("SESSION_COOKIE_SECURE=yes")
	}
	if l := OIDCScopes.Get(mapReader{"OIDC_SCOPES": "openid, ,groups"}); !slices.Equal(l, []string{"openid", "groups"}) {
		t.Fatalf("OIDC_SCOPES: %v", l)
	}
	// A string's "" is a value, not the default.
	if AdminGroupName.Get(mapReader{"ADMIN_GROUP_NAME": ""}) != "" {
		t.Fatal("ADMIN_GROUP_NAME empty")
	}
	if MaxUploadSize.Get(empty) != 1<<30 || TextQualityThreshold.Get(empty) != 85 || KafkaPartitions.Key() != "KAFKA_PARTITIONS" {
		t.Fatal("int64, float or key")
	}
	// Catalogue copies: a caller's change is not seen by the next.
	c := Catalogue()
	c[0].Default = "changed"
	for i := range c {
		if c[i].Options != nil {
			c[i].Options[0] = "changed"
		}
	}
	if Catalogue()[0].Default == "changed" || LogLevel.Default() != "info" {
		t.Fatal("Catalogue shares its entries")
	}
	for _, d := range Catalogue() {
		if slices.Contains(d.Options, "changed") {
			t.Fatalf("%s: Catalogue shares its options", d.Key)
		}
	}
}
