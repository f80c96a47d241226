//go:build race

package pipeline

// raceBuild says this test binary runs under the race detector. The
// docflow binary the multi-process test builds takes the same flag, so the
// build reuses the packages `go test` compiled instead of compiling every
// package again without it.
const raceBuild = true
