package steps

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"docflow"
)

// relativePaths rewrites what a step reports so that files under the work
// dir or the temp dir are named relative to it: "tmp/docflow-ocr-…/x.pgm"
// or "blobs/ab/…" instead of the server's absolute paths. The engine
// writes step messages and errors into the processing log, which users
// read; tools quote the files they were given in their errors.
type relativePaths struct {
	docflow.Step
	paths *pathRewriter
}

func (s relativePaths) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	res, err := s.Step.Run(ctx, in)
	if res != nil {
		res.Message = s.paths.rewrite(res.Message)
	}
	return res, s.paths.rewriteError(err)
}

// pathRewriter replaces directory prefixes in text.
type pathRewriter struct {
	re   *regexp.Regexp
	repl map[string]string // matched directory → what replaces it
}

// newPathRewriter names files under each dir (and the dir itself)
// relative to the first dir that holds them: dirs[0] is the work dir.
func newPathRewriter(dirs ...string) *pathRewriter {
	p := &pathRewriter{repl: map[string]string{}}
	base := ""
	for _, d := range dirs {
		if d == "" {
			continue
		}
		forms := []string{filepath.Clean(d)}
		if abs, err := filepath.Abs(d); err == nil && abs != forms[0] {
			forms = append(forms, abs)
		}
		if base == "" {
			base = forms[len(forms)-1]
		}
		for _, f := range forms {
			if f == "/" || f == "." || p.repl[f] != "" {
				continue
			}
			abs, _ := filepath.Abs(f)
			rel, err := filepath.Rel(base, abs)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel = "." // outside the work dir: relative to itself
			}
			p.repl[f] = rel
		}
	}
	if len(p.repl) == 0 {
		return p
	}
	keys := make([]string, 0, len(p.repl))
	for k := range p.repl {
		keys = append(keys, regexp.QuoteMeta(k))
	}
	// Longest first, so that a directory inside another wins.
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	// A path starts the text or follows a space, quote, bracket, '=' or
	// ':' ("--output=/…", "file '/…'"), and the directory ends at a
	// separator or at a character no path of ours contains.
	p.re = regexp.MustCompile(`(^|[\s'"(\[=:])(` + strings.Join(keys, "|") + `)(/|$|[\s'")\],:;])`)
	return p
}

// rewrite returns s with the directories replaced.
func (p *pathRewriter) rewrite(s string) string {
	if p.re == nil || s == "" {
		return s
	}
	return p.re.ReplaceAllStringFunc(s, func(m string) string {
		sub := p.re.FindStringSubmatch(m)
		rel := p.repl[sub[2]]
		switch {
		case sub[3] == "/" && rel == ".":
			return sub[1]
		case sub[3] == "/":
			return sub[1] + rel + "/"
		}
		return sub[1] + rel + sub[3]
	})
}

// rewriteError returns err with its text, and the message of the
// docflow.Error it carries, rewritten; its code and the rest of its chain
// (timeouts, cancellation, panics) stay as they are.
func (p *pathRewriter) rewriteError(err error) error {
	if err == nil || p.re == nil {
		return err
	}
	msg := p.rewrite(err.Error())
	var de *docflow.Error
	var clean *docflow.Error
	if errors.As(err, &de) {
		if m := p.rewrite(de.Message); m != de.Message {
			c := *de
			c.Message = m
			clean = &c
		}
	}
	if msg == err.Error() && clean == nil {
		return err
	}
	return &rewrittenError{err: err, msg: msg, app: clean}
}

// rewrittenError is an error whose text was rewritten.
type rewrittenError struct {
	err error
	msg string
	app *docflow.Error // the chain's docflow.Error, rewritten (nil: unchanged)
}

func (e *rewrittenError) Error() string { return e.msg }
func (e *rewrittenError) Unwrap() error { return e.err }

// As hands out the rewritten docflow.Error, so that docflow.ErrorMessage
// gives the rewritten message too.
func (e *rewrittenError) As(target any) bool {
	if t, ok := target.(**docflow.Error); ok && e.app != nil {
		*t = e.app
		return true
	}
	return false
}
