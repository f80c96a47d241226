//go:build race

package streams

// raceBuild says this test binary runs under the race detector, which
// makes every step several times slower: timing bounds allow for it.
const raceBuild = true
