package http

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
)

// countRows runs a count query on the test database.
func countRows(e *testEnv, q string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.DB.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return n
}

// decode unmarshals a JSON body into v (or fails the test).
func decode(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
