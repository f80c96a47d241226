//go:build race

package e2e

// raceBuild says this test binary runs under the race detector; the
// docflow binary TestServeShutdownWithABacklog builds takes the same flag
// (see buildServe).
const raceBuild = true
