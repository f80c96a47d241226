package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"

	"docflow"
)

// Hashing is the offline embedder: signed feature hashing (FNV-1a, 64 bit)
// of word unigrams and bigrams, L2-normalised. The same text always gives
// the same vector, on every machine and version, so stored vectors stay
// comparable.
type Hashing struct {
	dims      int
	maxTokens int
}

var _ Embedder = (*Hashing)(nil)

// NewHashing returns a hashing embedder; dims <= 0 means DefaultDimensions
// and maxTokens <= 0 means DefaultMaxTokens.
func NewHashing(dims, maxTokens int) *Hashing {
	if dims <= 0 {
		dims = DefaultDimensions
	}
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	return &Hashing{dims: dims, maxTokens: maxTokens}
}

// Dimensions implements Embedder.
func (h *Hashing) Dimensions() int { return h.dims }

// Model implements Embedder; the name carries the dimension because vectors
// of two dimensions are not comparable.
func (h *Hashing) Model() string { return fmt.Sprintf("hashing-fnv1a-uni-bi-%d", h.dims) }

// Embed implements Embedder.
func (h *Hashing) Embed(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	toks := Tokens(text, h.maxTokens)
	if len(toks) == 0 {
		return nil, docflow.Errorf(docflow.EINVALID, "no words to embed")
	}
	acc := make([]float64, h.dims)
	hs := fnv.New64a()
	add := func(parts ...string) {
		hs.Reset()
		for i, p := range parts {
			if i > 0 {
				hs.Write([]byte{0}) // separator that no token contains
			}
			hs.Write([]byte(p))
		}
		sum := hs.Sum64()
		// Low bits pick the bucket, the top bit the sign: the sign makes
		// collisions cancel on average instead of piling up.
		idx := int(sum % uint64(h.dims))
		if sum>>63 == 1 {
			acc[idx]--
		} else {
			acc[idx]++
		}
	}
	for i, t := range toks {
		add(t)
		if i > 0 {
			add(toks[i-1], t)
		}
	}
	var norm float64
	for _, v := range acc {
		norm += v * v
	}
	out := make([]float32, h.dims)
	if norm == 0 {
		return out, nil
	}
	norm = math.Sqrt(norm)
	for i, v := range acc {
		out[i] = float32(v / norm)
	}
	return out, nil
}
