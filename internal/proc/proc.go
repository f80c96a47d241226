// Package proc runs the external tools of the processing steps (LibreOffice,
// poppler, Tesseract, img2pdf, librsvg, OCRmyPDF): each in its own process
// group, killed as a group when its context ends, under an address-space
// limit (SetMemoryLimit, TOOL_MEMORY_LIMIT), with a clear error when the
// tool is missing, runs out of time or runs out of memory.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"docflow"
)

// Packages names the Debian package that provides each tool, for the
// "not found" message.
var packages = map[string]string{
	"soffice":      "libreoffice-writer-nogui (and -calc-nogui, -impress-nogui)",
	"libreoffice":  "libreoffice-writer-nogui (and -calc-nogui, -impress-nogui)",
	"pdftotext":    "poppler-utils",
	"pdftoppm":     "poppler-utils",
	"pdfinfo":      "poppler-utils",
	"pdfunite":     "poppler-utils",
	"pdfseparate":  "poppler-utils",
	"tesseract":    "tesseract-ocr",
	"img2pdf":      "img2pdf",
	"rsvg-convert": "librsvg2-bin",
	"ocrmypdf":     "ocrmypdf",
	"prlimit":      "util-linux",
}

// Look resolves a tool on PATH (or an absolute path) and returns
// EUNAVAILABLE naming the package to install when it is missing.
func Look(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	base := name
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	}
	if pkg, ok := packages[base]; ok {
		return "", docflow.Errorf(docflow.EUNAVAILABLE, "%s not found on PATH: install %s", base, pkg)
	}
	return "", docflow.Errorf(docflow.EUNAVAILABLE, "%s not found on PATH", base)
}

// Cmd describes one tool run.
type Cmd struct {
	Path string
	Args []string
	// Env is added to the current environment.
	Env []string
	Dir string
	// Stdout receives standard output; nil collects it for Run's result.
	Stdout io.Writer
	// Timeout bounds the run (0 = only the context).
	Timeout time.Duration
}

// maxStderr bounds the standard error kept for error messages.
const maxStderr = 8 << 10

// tail keeps the last bytes written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxStderr {
		t.b = t.b[len(t.b)-maxStderr:]
	}
	return len(p), nil
}

// Result is what a finished run left behind.
type Result struct {
	Stdout []byte // when Cmd.Stdout was nil
	Stderr string // the last 8 KiB
}

// Run starts the tool in a new process group and waits for it. When ctx or
// the timeout ends, the whole group gets SIGKILL (LibreOffice forks
// soffice.bin, which a plain kill of the parent would orphan) and the error
// carries ETIMEOUT. A non-zero exit is an error holding the stderr tail.
//
// The tool runs under the memory limit (see SetMemoryLimit); a run that
// the limit stopped is EINVALID, with a message naming the limit: the
// same document would need the same memory again.
func Run(ctx context.Context, c Cmd) (*Result, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	path, args := c.Path, c.Args
	limit := MemoryLimit()
	if limit > 0 {
		// NOTE: os/exec cannot set a resource limit on the child alone
		// (SysProcAttr has no rlimit field, and setting one on this
		// process would bound the service itself), so prlimit sets it and
		// then execs the tool: the tool keeps the process, its pid and
		// its process group.
		pl, err := Look("prlimit")
		if err != nil {
			return nil, err
		}
		path = pl
		args = append([]string{"--as=" + strconv.FormatInt(limit, 10), "--", c.Path}, c.Args...)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// NOTE: a grandchild holding the output pipes open must not keep Wait
	// blocked after the kill.
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	} else {
		cmd.Stdout = &out
	}
	var errTail tail
	cmd.Stderr = &errTail
	start := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever the group left running (a daemonised helper) goes too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	res := &Result{Stdout: out.Bytes(), Stderr: string(errTail.b)}
	name := c.Path[strings.LastIndexByte(c.Path, '/')+1:]
	account(name, time.Since(start), cmd.ProcessState)
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return res, &docflow.Error{Code: docflow.ETIMEOUT, Message: fmt.Sprintf("%s timed out after %s and was killed", name, time.Since(start).Round(time.Millisecond))}
		}
		return res, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if limit > 0 && (err != nil || reportsOutOfMemory(res.Stderr)) {
		if e := memoryError(name, limit, res.Stderr, cmd.ProcessState); e != nil {
			return res, e
		}
	}
	if err != nil {
		msg := strings.TrimSpace(res.Stderr)
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 && len(msg) > 500 {
			msg = msg[i+1:]
		}
		return res, fmt.Errorf("%s: %w: %s", name, err, msg)
	}
	return res, nil
}

// Usage is what the runs of one tool cost so far in this process.
type Usage struct {
	Runs int
	Wall time.Duration
	// CPU is the user and system time of the tool's process (not of
	// grandchildren it did not wait for).
	CPU time.Duration
	// MaxRSS is the largest resident memory, in bytes, of one run of the
	// tool (or of a child it waited for).
	MaxRSS int64
}

var usage struct {
	sync.Mutex
	m map[string]Usage
}

func account(name string, wall time.Duration, ps *os.ProcessState) {
	usage.Lock()
	defer usage.Unlock()
	if usage.m == nil {
		usage.m = map[string]Usage{}
	}
	u := usage.m[name]
	u.Runs++
	u.Wall += wall
	if ps != nil {
		u.CPU += ps.UserTime() + ps.SystemTime()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			u.MaxRSS = max(u.MaxRSS, ru.Maxrss<<10) // KiB on Linux
		}
	}
	usage.m[name] = u
}

// Stats returns the usage of every tool run so far, by tool name: the
// benchmarks print where the CPU time of a document went.
func Stats() map[string]Usage {
	usage.Lock()
	defer usage.Unlock()
	out := make(map[string]Usage, len(usage.m))
	for k, v := range usage.m {
		out[k] = v
	}
	return out
}
