//go:build !race

package streams

// raceBuild says this test binary runs under the race detector.
const raceBuild = false
