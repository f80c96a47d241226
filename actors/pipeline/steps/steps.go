// Package steps holds the pipeline's standard steps, one docflow.Step per
// type of docflow.StandardSteps, which the engine's step actors run: the
// heavy ones wrap a function of processing/ (convert, OCR, extract,
// classify, embed metadata, compute embedding); check_duplicates and
// send_to_destinations ask a storage interface and the destinations. New
// builds all eight, and internal/app registers them (the test step lives
// apart, in teststep). A step reads its settings through docflow.SettingsStore on every
// run, so a changed setting applies to the next document without a
// restart.
//
// Errors follow docflow.Step's contract: a problem with the document itself
// (corrupt, encrypted, hostile, nothing to read) carries EINVALID and fails
// the step at once; anything else (a missing tool, a timeout, a provider
// that is down) is retried by the engine.
package steps

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/netguard"
	"docflow/internal/proc"
)

// RuleSource gives the classify step the stored rules
// (storage/postgres.ClassificationStore).
type RuleSource interface {
	// FindClassificationRules returns the system rules plus ownerID's own
	// (only the system rules for nil), highest priority first.
	FindClassificationRules(ctx context.Context, ownerID *string, enabledOnly bool) ([]*docflow.ClassificationRule, error)
}

// Deps is what the steps need.
type Deps struct {
	Settings docflow.SettingsStore
	Rules    RuleSource
	// Originals finds the original of a duplicate (check_duplicates).
	Originals Originals
	// Destinations of send_to_destinations (default: the local folder of
	// LOCAL_DESTINATION_DIR).
	Destinations Destinations
	// Queue, when set, queues each document's delivery to its owner's
	// destination integrations (DestinationQueue); the owner of a
	// document without one is the administrator's account in single-user
	// mode (AUTH_ENABLED false), nobody otherwise.
	Queue DestinationQueue
	// Recorder, when set, hears one integration metric per delivery of
	// send_to_destinations (MeasuredDestinations).
	Recorder docflow.Recorder
	Log      zerolog.Logger
	// TempDir holds working files and the LibreOffice profiles (default
	// os.TempDir()); cmd/docflow passes WORKDIR/tmp.
	TempDir string
	// WorkDir is WORKDIR: the steps' messages and errors (the processing
	// log) name files under it, and under TempDir, relative to it.
	WorkDir string
	// HTTPClient talks to the AI providers and the cloud OCR (default a
	// netguard client: their endpoints are the operator's, so a private
	// address is allowed, with the environment's proxy).
	HTTPClient *http.Client
}

// Steps is the set of processing steps of one worker process. Close it on
// shutdown: it owns the LibreOffice profiles.
type Steps struct {
	d       Deps
	convert *convertStep
	ocr     *ocrStep
	all     []docflow.Step
}

// New builds the steps. It needs Settings, Rules and Originals; tools are
// looked up when a step needs them, so a missing tool fails that step with
// a message naming it instead of failing the start.
func New(d Deps) (*Steps, error) {
	if d.Settings == nil || d.Rules == nil || d.Originals == nil {
		return nil, errors.New("steps: New needs Settings, Rules and Originals")
	}
	if d.Destinations == nil {
		settings := d.Settings
		d.Destinations = LocalDestinations(func() string { return docflow.LocalDestinationDir.Get(settings) })
	}
	if d.TempDir == "" {
		d.TempDir = os.TempDir()
	}
	if d.HTTPClient == nil {
		d.HTTPClient = netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true},
			Proxy: true, Redirects: 10})
	}
	if err := os.MkdirAll(d.TempDir, 0o700); err != nil {
		return nil, fmt.Errorf("steps: temp dir: %w", err)
	}
	toolMemoryLimit(d.Settings)
	s := &Steps{d: d}
	s.convert = &convertStep{d: d}
	s.ocr = newOCRStep(d)
	paths := newPathRewriter(d.WorkDir, d.TempDir)
	for _, st := range []docflow.Step{
		s.convert,
		s.ocr,
		&extractStep{d: d},
		&classifyStep{d: d},
		&embedMetadataStep{d: d},
		&embeddingStep{d: d},
	} {
		s.all = append(s.all, relativePaths{Step: st, paths: paths})
	}
	s.all = append(s.all,
		CheckDuplicates(d.Originals, func() bool { return docflow.EnableDeduplication.Get(d.Settings) }),
		SendToDestinationsQueued(MeasuredDestinations(d.Destinations, d.Recorder), d.Queue, destinationOwner(d.Settings)))
	return s, nil
}

// All returns the steps, one per type of docflow.StandardSteps:
// convert_to_pdf, ocr, extract_metadata, classify, embed_metadata,
// compute_embedding, check_duplicates, send_to_destinations.
func (s *Steps) All() []docflow.Step { return append([]docflow.Step(nil), s.all...) }

// Close releases the converters' LibreOffice profiles.
func (s *Steps) Close() error { return s.convert.close() }

// toolMemoryLimit applies TOOL_MEMORY_LIMIT to the external tools started
// from now on and returns it (0: no limit).
func toolMemoryLimit(st docflow.SettingsStore) int64 {
	n := max(docflow.ToolMemoryLimit.Get(st), 0)
	proc.SetMemoryLimit(n)
	return n
}

// invalidf is a document problem: the engine fails the step at once.
func invalidf(format string, args ...any) error {
	return docflow.Errorf(docflow.EINVALID, format, args...)
}

// boolOf reads a boolean from a step config or run options (JSON booleans,
// or the strings users put in forms).
func boolOf(m map[string]any, key string, def bool) bool {
	switch v := m[key].(type) {
	case bool:
		return v
	case string:
		if b, ok := docflow.ParseBool(v); ok {
			return b
		}
	case float64:
		return v != 0
	}
	return def
}

func stringOf(m map[string]any, key string) string {
	if v, ok := m[key].(string); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// workDir makes a private directory for one step run.
func workDir(d Deps, prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(d.TempDir, "docflow-"+prefix+"-")
	if err != nil {
		return "", nil, fmt.Errorf("work dir: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// tempPath names a file under the temp dir that no one else uses (a
// random name, not created: the caller writes and removes it).
func tempPath(d Deps, prefix, ext string) string {
	return filepath.Join(d.TempDir, "docflow-"+prefix+"-"+rand.Text()+ext)
}

// currentPDF returns a local path of the file's PDF version: the processed
// blob, else the original when it is a PDF. EINVALID when there is none
// (convert_to_pdf did not run and the original is not a PDF).
func currentPDF(ctx context.Context, in *docflow.StepInput) (string, error) {
	key := in.File.ProcessedBlob
	if key == "" {
		if !isPDF(in.File) {
			return "", invalidf("no PDF version of %q: add convert_to_pdf before this step", in.File.OriginalFilename)
		}
		key = in.File.OriginalBlob
	}
	p, err := in.Blobs.Path(ctx, key)
	if err != nil {
		return "", fmt.Errorf("open pdf version: %w", err)
	}
	return p, nil
}

func isPDF(f *docflow.File) bool {
	return strings.EqualFold(f.MimeType, "application/pdf") || strings.EqualFold(filepath.Ext(f.OriginalFilename), ".pdf")
}

// putFile stores a local file in the blob store and returns its key.
func putFile(ctx context.Context, blobs docflow.BlobStore, path string) (docflow.BlobInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return docflow.BlobInfo{}, fmt.Errorf("store result: %w", err)
	}
	defer f.Close()
	info, err := blobs.Put(ctx, f, 0)
	if err != nil {
		return info, fmt.Errorf("store result: %w", err)
	}
	return info, nil
}

// fileSize is the size of a local file (0 when it cannot be read).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// onceMap caches one value per key, built on first use.
type onceMap[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]V
}

func (o *onceMap[K, V]) get(k K, build func() (V, error)) (V, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if v, ok := o.m[k]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	if o.m == nil {
		o.m = map[K]V{}
	}
	o.m[k] = v
	return v, nil
}

func (o *onceMap[K, V]) each(fn func(V)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, v := range o.m {
		fn(v)
	}
}

// destinationOwner is whose destination integrations a document goes to:
// its owner's; a document without one (uploaded without signing in) is
// the single user's while AUTH_ENABLED is false (the account that owns
// the integrations made then), and goes to no integration otherwise.
func destinationOwner(st docflow.SettingsStore) func(*docflow.File) string {
	return func(f *docflow.File) string {
		if f.OwnerID != nil && *f.OwnerID != "" {
			return *f.OwnerID
		}
		if !docflow.AuthEnabled.Get(st) {
			return docflow.AdminUserID(st)
		}
		return ""
	}
}
