package steps

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/corpus"
	"docflow/storage/blob"
)

// mapSettings is a SettingsStore over a map, falling back to the
// catalogue defaults.
type mapSettings struct {
	mu sync.Mutex
	m  map[string]string
}

func newSettings(kv ...string) *mapSettings {
	s := &mapSettings{m: map[string]string{}}
	for _, d := range docflow.Catalogue() {
		if d.Default != "" {
			s.m[d.Key] = d.Default
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		s.m[kv[i]] = kv[i+1]
	}
	return s
}

func (s *mapSettings) Get(k string) string { s.mu.Lock(); defer s.mu.Unlock(); return s.m[k] }
func (s *mapSettings) set(k, v string)     { s.mu.Lock(); defer s.mu.Unlock(); s.m[k] = v }
func (s *mapSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "not in tests")
}
func (s *mapSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (s *mapSettings) Set(_ context.Context, k, v string) (*docflow.Setting, error) {
	s.set(k, v)
	return nil, nil
}
func (s *mapSettings) Delete(context.Context, string) error { return nil }

// noOriginals is an Originals that finds no file: every file is its own
// original.
type noOriginals struct{}

func (noOriginals) FindOriginal(context.Context, string, int64) (*docflow.File, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no original")
}

// staticRules is a RuleSource over a slice.
type staticRules []*docflow.ClassificationRule

func (r staticRules) FindClassificationRules(_ context.Context, owner *string, enabledOnly bool) ([]*docflow.ClassificationRule, error) {
	var out []*docflow.ClassificationRule
	for _, x := range r {
		if (x.OwnerID == nil || (owner != nil && *x.OwnerID == *owner)) && (!enabledOnly || x.Enabled) {
			out = append(out, x)
		}
	}
	return out, nil
}

// fixture is a set of steps on a temporary blob store.
type fixture struct {
	t        *testing.T
	dir      string // the work dir: blobs and tmp
	settings *mapSettings
	blobs    *blob.Local
	steps    *Steps
	byType   map[string]docflow.Step
}

func newFixture(t *testing.T, rules staticRules, kv ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	bs, err := blob.Open(filepath.Join(dir, "blobs"), blob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fx := &fixture{t: t, dir: dir, settings: newSettings(kv...), blobs: bs, byType: map[string]docflow.Step{}}
	fx.steps, err = New(Deps{Settings: fx.settings, Rules: rules, Originals: noOriginals{}, Log: zerolog.Nop(), TempDir: filepath.Join(dir, "tmp"), WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fx.steps.Close() })
	for _, s := range fx.steps.All() {
		fx.byType[s.Type()] = s
	}
	return fx
}

// file stores path as the original of a new file record.
func (fx *fixture) file(path, mimeType string) *docflow.File {
	fx.t.Helper()
	f, err := os.Open(path)
	if err != nil {
		fx.t.Fatal(err)
	}
	defer f.Close()
	info, err := fx.blobs.Put(context.Background(), f, 0)
	if err != nil {
		fx.t.Fatal(err)
	}
	return &docflow.File{ID: 1, OriginalFilename: filepath.Base(path), MimeType: mimeType, FileSize: info.Size,
		FileHash: info.Key, OriginalBlob: info.Key, AIMetadata: map[string]any{}}
}

// run runs one step on f.
func (fx *fixture) run(stepType string, f *docflow.File, cfg, opts map[string]any) (*docflow.StepResult, error) {
	fx.t.Helper()
	return fx.byType[stepType].Run(fx.t.Context(), &docflow.StepInput{RunID: "run", StepType: stepType, Attempt: 1,
		Config: cfg, Options: opts, File: f, Blobs: fx.blobs})
}

// must runs one step and fails the test on error.
func (fx *fixture) must(stepType string, f *docflow.File) *docflow.StepResult {
	fx.t.Helper()
	res, err := fx.run(stepType, f, nil, nil)
	if err != nil {
		fx.t.Fatalf("%s on %s: %v", stepType, f.OriginalFilename, err)
	}
	return res
}

// pdfInfo returns pdfinfo's output for a blob.
func (fx *fixture) pdfInfo(key string) string {
	fx.t.Helper()
	p, err := fx.blobs.Path(context.Background(), key)
	if err != nil {
		fx.t.Fatal(err)
	}
	out, err := exec.Command("pdfinfo", p).CombinedOutput()
	if err != nil {
		fx.t.Fatalf("pdfinfo: %v: %s", err, out)
	}
	return string(out)
}

// sharedCorpus is the test corpus of this binary, with small scanned pages
// so that OCR stays quick.
func sharedCorpus(t *testing.T) *corpus.Corpus {
	return corpus.Shared(t, corpus.Options{Seed: 7, ScanWidthMM: 150, ScanHeightMM: 80, ScanLines: 6})
}

func TestMain(m *testing.M) { os.Exit(corpus.RunTests(m)) }
