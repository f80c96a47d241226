package pdfconf

import (
	"sync"
	"testing"
)

// Run with -race: concurrent first uses must not race.
func TestNewIsSafeConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := New()
			c.ValidationMode = 1 // each caller owns its copy
		}()
	}
	wg.Wait()
}
