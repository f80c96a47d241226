package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"docflow"
)

// toolPackages names the Debian package of each tool, for the message of a
// step that finds it missing.
var toolPackages = map[string]string{
	"tesseract":   "tesseract-ocr",
	"pdftotext":   "poppler-utils",
	"pdftoppm":    "poppler-utils",
	"pdfunite":    "poppler-utils",
	"pdfseparate": "poppler-utils",
	"pdfinfo":     "poppler-utils",
}

// lookTool resolves a tool on PATH; EUNAVAILABLE names the package to
// install.
func lookTool(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err == nil {
		return p, nil
	}
	if pkg, ok := toolPackages[name]; ok {
		return "", docflow.Errorf(docflow.EUNAVAILABLE, "%s not found on PATH: install %s", name, pkg)
	}
	return "", docflow.Errorf(docflow.EUNAVAILABLE, "%s not found on PATH", name)
}

// maxStderr bounds the standard error kept for messages.
const maxStderr = 4 << 10

// runTool runs a tool in its own process group, killed as a group when ctx
// ends or timeout passes. It returns standard output; a failure carries the
// tail of standard error.
func runTool(ctx context.Context, timeout time.Duration, env []string, name string, args ...string) ([]byte, error) {
	bin, err := lookTool(name)
	if err != nil {
		return nil, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return stdout.Bytes(), nil
	}
	msg := strings.TrimSpace(stderr.String())
	if len(msg) > maxStderr {
		msg = "…" + msg[len(msg)-maxStderr:]
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, docflow.Errorf(docflow.ETIMEOUT, "%s timed out after %s", name, timeout)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", name, ctx.Err())
	}
	if msg == "" {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return nil, fmt.Errorf("%s: %w: %s", name, err, msg)
}
