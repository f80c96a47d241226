package corpus

import (
	"os"
	"os/exec"
	"sync"
	"testing"
)

// shared is the corpus of one Options value, generated once per test binary.
type shared struct {
	once sync.Once
	dir  string
	c    *Corpus
	err  error
}

// NOTE: a package-level cache, because sharing across the tests of one
// binary is the point: generating the scans costs seconds per package.
var (
	sharedMu sync.Mutex
	corpora  = map[Options]*shared{}
)

// Shared returns the corpus for o, generated on first use in a temporary
// directory and then reused by every test of the binary. The package's
// TestMain must call RunTests so that the directory is removed.
func Shared(t testing.TB, o Options) *Corpus {
	t.Helper()
	sharedMu.Lock()
	s, ok := corpora[o]
	if !ok {
		s = &shared{}
		corpora[o] = s
	}
	sharedMu.Unlock()
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", "docflow-corpus-")
		if s.err == nil {
			s.c, s.err = Generate(s.dir, o)
		}
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.c
}

// RunTests runs the tests and removes the corpora Shared generated; a
// TestMain passes its result to os.Exit.
func RunTests(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	for o, s := range corpora {
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
		delete(corpora, o)
	}
	return code
}

// RequireTools skips the test, naming the first tool that is not on PATH.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s is not installed (make test installs it)", tool)
		}
	}
}
