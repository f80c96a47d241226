package proc

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"

	"docflow"
)

// DefaultMemoryLimit is the address space a tool may use when
// SetMemoryLimit was not called: TOOL_MEMORY_LIMIT's default, 1 GiB.
//
// NOTE: LibreOffice maps its libraries and a heap up front, about half of
// this before it converts anything; 1 GiB leaves it room for documents with
// pictures, and the other tools need far less (docs/pipeline.md, "Bounds on
// the processing tools", gives each tool's need).
const DefaultMemoryLimit int64 = 1 << 30

var memoryLimit atomic.Int64

func init() { memoryLimit.Store(DefaultMemoryLimit) }

// SetMemoryLimit sets the address-space limit (RLIMIT_AS, in bytes) that
// every tool started afterwards runs under; 0 or less runs them without
// one. It bounds each process of a tool (LibreOffice's soffice.bin,
// OCRmyPDF's Tesseract and Ghostscript) on its own.
func SetMemoryLimit(bytes int64) { memoryLimit.Store(max(bytes, 0)) }

// MemoryLimit returns the limit tools run under (0: none).
func MemoryLimit() int64 { return memoryLimit.Load() }

// oomPhrases are what the tools and their libraries print when an
// allocation fails: poppler ("Out of memory"), Leptonica under Tesseract
// ("pixdata_malloc fail"), C++ (std::bad_alloc), Python (MemoryError), the
// Go runtime, the dynamic loader when a library cannot be mapped, glibc.
var oomPhrases = []string{
	"out of memory", "bad_alloc", "memoryerror", "malloc fail", "cannot allocate memory",
	"not enough memory", "failed to allocate", "allocation failed", "insufficient memory",
	"failed to map segment", "memory exhausted",
}

// reportsOutOfMemory tells whether stderr says an allocation failed.
func reportsOutOfMemory(stderr string) bool {
	s := strings.ToLower(stderr)
	for _, p := range oomPhrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// memoryError tells whether a failed run under the limit was stopped by
// it, and says so (EINVALID: the same document would need the same memory
// again); nil when the failure looks like something else. The tool said an
// allocation failed, or it died of the signal a failed allocation ends in
// (an abort after std::bad_alloc, a segmentation fault after an unchecked
// malloc), itself or, as a shell wrapper such as LibreOffice's soffice
// reports it, as the exit status 128 + the signal.
func memoryError(name string, limit int64, stderr string, ps *os.ProcessState) error {
	if reportsOutOfMemory(stderr) {
		return &docflow.Error{Code: docflow.EINVALID, Message: fmt.Sprintf(
			"%s ran out of memory: external tools may use at most %s (TOOL_MEMORY_LIMIT) and this document needs more", name, FormatBytes(limit))}
	}
	if ps == nil {
		return nil
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok {
		return nil
	}
	sig := syscall.Signal(-1)
	switch {
	case ws.Signaled():
		sig = ws.Signal()
	case ws.Exited() && ws.ExitStatus() > 128:
		sig = syscall.Signal(ws.ExitStatus() - 128)
	}
	switch sig {
	case syscall.SIGABRT, syscall.SIGSEGV, syscall.SIGBUS:
		return &docflow.Error{Code: docflow.EINVALID, Message: fmt.Sprintf(
			"%s crashed (%s), most likely out of memory: external tools may use at most %s (TOOL_MEMORY_LIMIT)", name, sig, FormatBytes(limit))}
	}
	return nil
}

// FormatBytes writes a byte count the way settings are talked about:
// "1 GiB", "768 MiB", "1.5 GiB".
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
