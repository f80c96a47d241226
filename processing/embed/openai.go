package embed

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"docflow"
	"docflow/processing/internal/httpx"
	"docflow/processing/internal/openai"
)

// OpenAIConfig configures an OpenAI-compatible embeddings endpoint (OpenAI,
// Ollama, vLLM, LocalAI…).
type OpenAIConfig struct {
	// BaseURL is the API root including its version, e.g.
	// https://api.openai.com/v1 or http://localhost:11434/v1.
	BaseURL string
	APIKey  string
	Model   string
	// Dimensions is the vector length the caller stores; a reply of another
	// length is an error. Required.
	Dimensions int
	// SendDimensions asks the server for that length (OpenAI's
	// text-embedding-3 models can shorten their vectors; many servers
	// reject the field).
	SendDimensions bool
	// MaxTokens caps the input in words (a cheap stand-in for model
	// tokens; 0 = DefaultMaxTokens).
	MaxTokens  int
	Timeout    time.Duration // per attempt; default 30 s
	Attempts   int           // default 3
	Backoff    time.Duration // default 500 ms
	HTTPClient *http.Client
}

// OpenAI is the Embedder for an OpenAI-compatible /embeddings endpoint.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI checks the configuration and returns the embedder.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "embedding model is not configured: set EMBEDDING_MODEL")
	}
	if cfg.Dimensions <= 0 {
		return nil, docflow.Errorf(docflow.EINVALID, "embedding dimensions must be positive: set EMBEDDING_DIMENSIONS")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	client := openai.New(openai.Config{BaseURL: cfg.BaseURL, Timeout: cfg.Timeout, Attempts: cfg.Attempts, Backoff: cfg.Backoff,
		HTTPClient: cfg.HTTPClient}, 30*time.Second, 500*time.Millisecond)
	return &OpenAI{cfg: cfg, client: client}, nil
}

// Dimensions implements Embedder.
func (o *OpenAI) Dimensions() int { return o.cfg.Dimensions }

// Model implements Embedder.
func (o *OpenAI) Model() string { return o.cfg.Model }

type embeddingRequest struct {
	Model      string `json:"model"`
	Input      string `json:"input"`
	Dimensions int    `json:"dimensions,omitempty"`
}

type embeddingResponse struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     int       `json:"index"`
	} `json:"data"`
}

// Embed implements Embedder.
func (o *OpenAI) Embed(ctx context.Context, text string) ([]float32, error) {
	words := strings.Fields(text)
	if len(words) == 0 {
		return nil, docflow.Errorf(docflow.EINVALID, "no words to embed")
	}
	if len(words) > o.cfg.MaxTokens {
		words = words[:o.cfg.MaxTokens]
	}
	req := embeddingRequest{Model: o.cfg.Model, Input: strings.Join(words, " ")}
	if o.cfg.SendDimensions {
		req.Dimensions = o.cfg.Dimensions
	}
	url := o.client.URL("embeddings")
	var vec []float32
	err := openai.Post(ctx, o.client, url, openai.Header(o.cfg.APIKey, nil), req, func(resp *embeddingResponse) error {
		if len(resp.Data) == 0 {
			return fmt.Errorf("reply holds no embedding")
		}
		v := resp.Data[0].Embedding
		if len(v) != o.cfg.Dimensions {
			// A misconfigured model never fixes itself: no retry.
			return httpx.Permanent(docflow.Errorf(docflow.EINVALID,
				"embedding model %q returned %d dimensions, configured EMBEDDING_DIMENSIONS is %d", o.cfg.Model, len(v), o.cfg.Dimensions))
		}
		vec = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embeddings %s: %w", url, err)
	}
	return vec, nil
}
