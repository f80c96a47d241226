package docflow

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a request rate such as the RATE_LIMIT_* settings' "100/minute".
type Rate struct {
	N      int
	Period time.Duration
	// Unit is the period's word for messages ("second", "minute", "hour", "day").
	Unit string
}

// ParseRate accepts "N/second|minute|hour|day" (also "N per minute" and the
// short forms s, sec, m, min, h, d, with or without a plural s).
func ParseRate(s string) (Rate, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.Replace(s, " per ", "/", 1)
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("%q is not a rate: write N/period, for example 100/minute", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return Rate{}, fmt.Errorf("%q: the count must be a positive integer", s)
	}
	unit = strings.TrimSpace(unit)
	if len(unit) > 1 {
		unit = strings.TrimSuffix(unit, "s")
	}
	var p time.Duration
	switch unit {
	case "second", "sec", "s":
		p, unit = time.Second, "second"
	case "minute", "min", "m":
		p, unit = time.Minute, "minute"
	case "hour", "h":
		p, unit = time.Hour, "hour"
	case "day", "d":
		p, unit = 24*time.Hour, "day"
	default:
		return Rate{}, fmt.Errorf("%q: the period must be second, minute, hour or day", s)
	}
	return Rate{N: n, Period: p, Unit: unit}, nil
}
