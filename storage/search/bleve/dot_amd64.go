//go:build amd64 && !purego

package bleve

import "golang.org/x/sys/cpu"

// dotAVX2 is the dot product of a[:n] and b[:n] with AVX2 and FMA.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// hasAVX2 is read once: the scan calls dot 100,000 times a query and the CPU
// does not change underneath us.
var hasAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dot returns the dot product of two vectors of equal length.
// NOTE: the assembly kernel is about three times faster than the unrolled Go
// loop (the Go compiler does not vectorise), which is what keeps an exact scan
// of 100,000 × 384 floats inside the latency budget on two cores.
func dot(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	if hasAVX2 {
		_ = b[len(a)-1]
		return dotAVX2(&a[0], &b[0], len(a))
	}
	return dotGeneric(a, b)
}
