//go:build !amd64 || purego

package bleve

// dot returns the dot product of two vectors of equal length.
func dot(a, b []float32) float32 { return dotGeneric(a, b) }
