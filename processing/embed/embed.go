// Package embed turns document text into a vector for similarity search.
// Providers: hashing (offline, deterministic) and openai (any
// OpenAI-compatible /embeddings endpoint).
package embed

import (
	"context"
	"strings"
	"unicode"

	"docflow"
)

// Embedder computes one embedding per text.
type Embedder interface {
	// Embed returns a vector of Dimensions() values. Returns EINVALID when
	// the text holds nothing to embed.
	Embed(ctx context.Context, text string) ([]float32, error)
	// Dimensions is the length of every vector this embedder returns.
	Dimensions() int
	// Model names the model (stored beside the vector, so vectors of
	// different models are never compared).
	Model() string
}

// Defaults shared by the providers.
const (
	DefaultDimensions = 384
	DefaultMaxTokens  = 2048
)

// Tokens splits text into lowercased words (runs of letters and digits), at
// most max of them (max <= 0: no cap).
func Tokens(text string, max int) []string {
	var out []string
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		}
		if !word && start >= 0 {
			out = append(out, strings.ToLower(text[start:i]))
			start = -1
			if max > 0 && len(out) >= max {
				return out
			}
		}
	}
	if start >= 0 && (max <= 0 || len(out) < max) {
		out = append(out, strings.ToLower(text[start:]))
	}
	return out
}

// Provider names for Config.Provider (the EMBEDDING_PROVIDER setting).
const (
	ProviderHashing = "hashing"
	ProviderOpenAI  = "openai"
)

// Config chooses and configures an embedder.
type Config struct {
	Provider   string // hashing (default) or openai
	Dimensions int    // EMBEDDING_DIMENSIONS; 0 = DefaultDimensions
	MaxTokens  int    // EMBEDDING_MAX_TOKENS; 0 = DefaultMaxTokens
	// OpenAI holds the endpoint settings; its Dimensions and MaxTokens
	// default to the fields above.
	OpenAI OpenAIConfig
}

// New returns the configured embedder. An unknown provider is EINVALID.
func New(cfg Config) (Embedder, error) {
	dims := cfg.Dimensions
	if dims <= 0 {
		dims = DefaultDimensions
	}
	switch strings.ToLower(cfg.Provider) {
	case "", ProviderHashing:
		return NewHashing(dims, cfg.MaxTokens), nil
	case ProviderOpenAI:
		oc := cfg.OpenAI
		if oc.Dimensions == 0 {
			oc.Dimensions = dims
		}
		if oc.MaxTokens == 0 {
			oc.MaxTokens = cfg.MaxTokens
		}
		return NewOpenAI(oc)
	}
	return nil, docflow.Errorf(docflow.EINVALID, "unknown embedding provider %q: use hashing or openai", cfg.Provider)
}
