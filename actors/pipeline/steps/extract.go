package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"docflow"
	"docflow/processing/extract"
)

// extractStep is extract_metadata: the provider named by METADATA_PROVIDER
// (rules, offline, by default; openai for any OpenAI-compatible chat
// endpoint) reads the OCR text and the filename.
type extractStep struct{ d Deps }

var _ docflow.Step = (*extractStep)(nil)

func (s *extractStep) Type() string { return docflow.StepExtractMetadata }

// metadataKeys are the AI metadata keys extract_metadata owns: a new run
// replaces them and leaves the others (classification, pdf properties).
var metadataKeys = []string{"title", "document_type", "tags", "sender", "date", "amount", "currency",
	"language", "reference_number", "iban", "confidence", "provider"}

func (s *extractStep) provider() (extract.Provider, error) {
	st := s.d.Settings
	name := strings.TrimSpace(docflow.MetadataProvider.Get(st))
	cfg := extract.Config{Provider: name}
	if strings.EqualFold(name, extract.ProviderOpenAI) {
		cfg.OpenAI = extract.OpenAIConfig{
			BaseURL:    docflow.OpenAIBaseURL.Get(st),
			APIKey:     docflow.OpenAIAPIKey.Get(st),
			Model:      docflow.OpenAIModel.Get(st),
			HTTPClient: s.d.HTTPClient,
		}
		if cfg.OpenAI.Model == "" {
			return nil, invalidf("METADATA_PROVIDER is openai but OPENAI_MODEL is not set")
		}
	}
	return extract.New(cfg)
}

func (s *extractStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	f := in.File
	p, err := s.provider()
	if err != nil {
		return nil, err
	}
	meta, err := p.Extract(ctx, f.OCRText, f.OriginalFilename)
	if err != nil {
		return nil, fmt.Errorf("extract metadata (%s): %w", p.Name(), err)
	}
	extract.Normalize(meta)
	if meta.Provider == "" {
		meta.Provider = p.Name()
	}
	m, err := toMap(meta)
	if err != nil {
		return nil, err
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	for _, k := range metadataKeys {
		delete(f.AIMetadata, k)
	}
	for k, v := range m {
		f.AIMetadata[k] = v
	}
	if meta.Title != "" {
		t := meta.Title
		f.DocumentTitle = &t
	}
	if meta.Language != "" {
		f.Language = meta.Language
	}
	msg := fmt.Sprintf("Metadata extracted by %s", p.Name())
	if meta.DocumentType != "" {
		msg += ": " + meta.DocumentType
	}
	if meta.Title != "" {
		msg += fmt.Sprintf(" %q", meta.Title)
	}
	return &docflow.StepResult{Message: msg, Bytes: int64(len(f.OCRText))}, nil
}

// toMap turns a struct into the JSON object shape stored in AI metadata.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return m, nil
}
