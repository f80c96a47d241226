package embed

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestHashing(t *testing.T) {
	ctx := context.Background()
	h := NewHashing(0, 0)
	if h.Dimensions() != 384 {
		t.Fatalf("dims %d", h.Dimensions())
	}
	a, err := h.Embed(ctx, "Invoice from ACME GmbH for consulting services in March")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := h.Embed(ctx, "invoice FROM acme gmbh for consulting services in march!")
	b, _ := h.Embed(ctx, "Invoice from ACME GmbH for consulting services in April")
	c, _ := h.Embed(ctx, "Der Mietvertrag für die Wohnung beginnt am ersten Juni")
	if len(a) != 384 {
		t.Fatalf("len %d", len(a))
	}
	var norm float64
	for _, v := range a {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("not normalised: %v", norm)
	}
	if cosine(a, a2) < 0.9999 {
		t.Fatalf("not deterministic/case-insensitive: %v", cosine(a, a2))
	}
	if s1, s2 := cosine(a, b), cosine(a, c); s1 < 0.6 || s2 > 0.3 || s1 <= s2 {
		t.Fatalf("similar %.3f, unrelated %.3f", s1, s2)
	}
	// Cap: words beyond MaxTokens do not change the vector.
	capped := NewHashing(64, 3)
	x, _ := capped.Embed(ctx, "one two three")
	y, _ := capped.Embed(ctx, "one two three four five")
	if cosine(x, y) < 0.9999 {
		t.Fatal("max tokens not applied")
	}
	if _, err := h.Embed(ctx, " ... "); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("empty text: %v", err)
	}
}

func embeddingServer(t *testing.T, dims int, hits *atomic.Int32, delay time.Duration) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad path or key", http.StatusUnauthorized)
			return
		}
		var req embeddingRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "m" || req.Input == "" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if n == 1 && delay > 0 {
			time.Sleep(delay)
		}
		vec := make([]float32, dims)
		vec[0] = 1
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{map[string]any{"index": 0, "embedding": vec}}})
	}))
}

func TestOpenAI(t *testing.T) {
	var hits atomic.Int32
	srv := embeddingServer(t, 8, &hits, 300*time.Millisecond)
	defer srv.Close()
	e, err := New(Config{Provider: "openai", Dimensions: 8, OpenAI: OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Timeout: 100 * time.Millisecond, Backoff: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.Embed(context.Background(), "hello world")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 8 || hits.Load() != 2 || e.Model() != "m" {
		t.Fatalf("vec %v hits %d (slow first reply must be retried)", v, hits.Load())
	}
}

func TestOpenAIWrongDimension(t *testing.T) {
	var hits atomic.Int32
	srv := embeddingServer(t, 1536, &hits, 0)
	defer srv.Close()
	e, _ := NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "m", Dimensions: 384})
	_, err := e.Embed(context.Background(), "hello")
	if err == nil || docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "1536") || !strings.Contains(docflow.ErrorMessage(err), "384") {
		t.Fatalf("want dimension error, got %v", err)
	}
	if hits.Load() != 1 {
		t.Fatalf("a wrong dimension must not be retried, got %d calls", hits.Load())
	}
	// Bad key: permanent, one call.
	hits.Store(0)
	e, _ = NewOpenAI(OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "wrong", Model: "m", Dimensions: 1536})
	if _, err := e.Embed(context.Background(), "hello"); err == nil || hits.Load() != 1 {
		t.Fatalf("401: err %v, hits %d", err, hits.Load())
	}
}

func TestNewConfig(t *testing.T) {
	if _, err := New(Config{Provider: "nope"}); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatal(err)
	}
	if _, err := New(Config{Provider: "openai"}); err == nil {
		t.Fatal("openai without model must fail")
	}
}
