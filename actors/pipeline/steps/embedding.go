package steps

import (
	"context"
	"fmt"
	"strings"

	"docflow"
	"docflow/processing/embed"
)

// embeddingStep is compute_embedding: the provider named by
// EMBEDDING_PROVIDER (hashing, offline, by default; openai for any
// OpenAI-compatible /embeddings endpoint) turns the OCR text into the
// vector the engine stores with its dimension and model.
type embeddingStep struct{ d Deps }

var _ docflow.Step = (*embeddingStep)(nil)

func (s *embeddingStep) Type() string { return docflow.StepComputeEmbedding }

// embedder builds the configured embedder. The openai provider uses
// EMBEDDING_BASE_URL and EMBEDDING_API_KEY, falling back to the chat
// endpoint's OPENAI_BASE_URL and OPENAI_API_KEY.
func (s *embeddingStep) embedder() (embed.Embedder, error) {
	st := s.d.Settings
	cfg := embed.Config{
		Provider:   strings.ToLower(strings.TrimSpace(docflow.EmbeddingProvider.Get(st))),
		Dimensions: docflow.EmbeddingDimensions.Get(st),
		MaxTokens:  docflow.EmbeddingMaxTokens.Get(st),
	}
	if cfg.Dimensions <= 0 {
		return nil, invalidf("EMBEDDING_DIMENSIONS must be positive, not %d", cfg.Dimensions)
	}
	if cfg.Provider == embed.ProviderOpenAI {
		base, key := docflow.EmbeddingBaseURL.Get(st), docflow.EmbeddingAPIKey.Get(st)
		if base == "" {
			base = docflow.OpenAIBaseURL.Get(st)
		}
		if key == "" {
			key = docflow.OpenAIAPIKey.Get(st)
		}
		cfg.OpenAI = embed.OpenAIConfig{
			BaseURL: base, APIKey: key, Model: docflow.EmbeddingModel.Get(st),
			Dimensions: cfg.Dimensions, MaxTokens: cfg.MaxTokens, HTTPClient: s.d.HTTPClient,
		}
	}
	return embed.New(cfg)
}

func (s *embeddingStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	text := in.File.OCRText
	if len(embed.Tokens(text, 1)) == 0 {
		// A blank page or a photo without text: nothing to compare, which
		// is not a failure of the document.
		return &docflow.StepResult{Skipped: true, Message: "No text to embed"}, nil
	}
	e, err := s.embedder()
	if err != nil {
		return nil, err
	}
	vec, err := e.Embed(ctx, text)
	if err != nil {
		return nil, fmt.Errorf("compute embedding: %w", err)
	}
	if len(vec) != e.Dimensions() {
		return nil, invalidf("embedding has %d dimensions, expected %d", len(vec), e.Dimensions())
	}
	return &docflow.StepResult{
		Message:        fmt.Sprintf("Embedding computed: %d dimensions, model %s", len(vec), e.Model()),
		Bytes:          int64(len(text)),
		Embedding:      vec,
		EmbeddingModel: e.Model(),
	}, nil
}
