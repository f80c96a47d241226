// Package extract derives document metadata (title, type, date, sender,
// amount, IBAN, reference, language, tags) from OCR text and the filename.
// Providers: rules (offline default) and openai (any OpenAI-compatible
// chat-completions endpoint: OpenAI, Azure OpenAI, Ollama, vLLM).
package extract

import (
	"context"
	"strings"

	"docflow"
)

// Provider extracts metadata from a document's text.
type Provider interface {
	// Extract returns the metadata found; fields it cannot tell are empty.
	// Errors are provider faults (network, a reply that never parses), not
	// "nothing found".
	Extract(ctx context.Context, text, filename string) (*docflow.Metadata, error)
	// Name is the provider name stored in Metadata.Provider.
	Name() string
}

// Provider names (the setting that picks one).
const (
	ProviderRules  = "rules"
	ProviderOpenAI = "openai"
)

// MaxTags bounds Metadata.Tags.
const MaxTags = 4

// Config picks and configures a provider.
type Config struct {
	Provider string // rules (default) or openai
	OpenAI   OpenAIConfig
}

// New returns the configured provider; an unknown name is EINVALID.
func New(cfg Config) (Provider, error) {
	switch strings.ToLower(cfg.Provider) {
	case "", ProviderRules:
		return NewRules(), nil
	case ProviderOpenAI:
		return NewOpenAI(cfg.OpenAI)
	}
	return nil, docflow.Errorf(docflow.EINVALID, "unknown metadata provider %q: use rules or openai", cfg.Provider)
}

// Normalize cleans metadata from any provider in place: date as
// YYYY-MM-DD, amount as a decimal with two places, ISO currency, ISO 639-1
// language, lower-case document type and at most MaxTags distinct tags,
// confidence within 0–1.
func Normalize(m *docflow.Metadata) {
	m.Title = oneLine(m.Title, 200)
	m.Sender = oneLine(m.Sender, 200)
	m.ReferenceNumber = oneLine(m.ReferenceNumber, 64)
	m.Date = NormalizeDate(m.Date)
	m.Amount = NormalizeAmount(m.Amount)
	m.Currency = NormalizeCurrency(m.Currency)
	m.Language = NormalizeLanguage(m.Language)
	m.DocumentType = strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(m.DocumentType, "-", " "))), "_")
	if m.IBAN != "" {
		if iban := strings.ToUpper(strings.ReplaceAll(m.IBAN, " ", "")); ValidIBAN(iban) {
			m.IBAN = iban
		} else {
			m.IBAN = ""
		}
	}
	var tags []string
	seen := map[string]bool{}
	for _, t := range m.Tags {
		t = strings.ToLower(oneLine(t, 40))
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		tags = append(tags, t)
		if len(tags) == MaxTags {
			break
		}
	}
	m.Tags = tags
	switch {
	case m.Confidence > 1 && m.Confidence <= 100:
		m.Confidence /= 100 // a percentage
	case m.Confidence > 100 || m.Confidence < 0 || m.Confidence != m.Confidence:
		m.Confidence = 0
	}
}

func oneLine(s string, maxRunes int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > maxRunes {
		s = strings.TrimSpace(string(r[:maxRunes]))
	}
	return s
}
