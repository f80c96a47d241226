package streams

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestLateFetchWarnings: late fetches are one warning per period with how
// many happened since the last one; those the sampler leaves out are
// counted in the next warning, not lost.
func TestLateFetchWarnings(t *testing.T) {
	// Serial: it is timed against the sampler's 200 ms period.
	var out bytes.Buffer
	log := zerolog.New(&out).Level(zerolog.InfoLevel)
	c := &Consumer{log: log, lateWarn: log.Sample(&zerolog.BurstSampler{Burst: 1, Period: 200 * time.Millisecond})}
	for range 3 {
		c.lateFetch(log, time.Second, 7)
	}
	time.Sleep(250 * time.Millisecond)
	c.lateFetch(log, time.Second, 8)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"late_fetches":1`) || !strings.Contains(lines[1], `"late_fetches":3`) {
		t.Fatalf("warnings:\n%s", out.String())
	}
}
