//go:build !race

package pipeline

// raceBuild: see race_on_test.go.
const raceBuild = false
