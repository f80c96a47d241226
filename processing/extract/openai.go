package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"docflow"
	"docflow/processing/internal/openai"
)

// OpenAIConfig configures an OpenAI-compatible chat-completions endpoint.
type OpenAIConfig struct {
	// BaseURL is the API root including its version, e.g.
	// https://api.openai.com/v1 or http://localhost:11434/v1.
	BaseURL string
	APIKey  string
	Model   string
	// JSONMode sends response_format {"type":"json_object"}; servers that
	// reject it can turn it off (the prompt asks for JSON either way).
	JSONMode *bool
	// MaxChars caps the document text sent (default 12000 characters).
	MaxChars int
	Timeout  time.Duration // per attempt; default 60 s
	Attempts int           // default 3
	Backoff  time.Duration // default 1 s
	// ExtraHeaders are added to every request (Azure OpenAI's api-key, a
	// proxy's routing header…).
	ExtraHeaders http.Header
	HTTPClient   *http.Client
}

// OpenAI asks a chat model for the metadata as a JSON object.
type OpenAI struct {
	cfg    OpenAIConfig
	client *openai.Client
}

var _ Provider = (*OpenAI)(nil)

// NewOpenAI checks the configuration and returns the provider.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if cfg.Model == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "metadata model is not configured: set the OpenAI model")
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = 12000
	}
	client := openai.New(openai.Config{BaseURL: cfg.BaseURL, Timeout: cfg.Timeout, Attempts: cfg.Attempts, Backoff: cfg.Backoff,
		HTTPClient: cfg.HTTPClient}, 60*time.Second, time.Second)
	return &OpenAI{cfg: cfg, client: client}, nil
}

// Name implements Provider.
func (o *OpenAI) Name() string { return ProviderOpenAI }

const systemPrompt = `You extract metadata from documents. Reply with one JSON object and nothing else, with these keys:
"title" (string, a short descriptive title), "document_type" (one of invoice, contract, receipt, letter, report, bank_statement, tax_document, insurance, payslip, or another lower-case word), "tags" (array of at most 4 lower-case strings), "sender" (string, the issuing person or organisation), "date" (string, the document date as YYYY-MM-DD), "amount" (string, the total amount as a decimal number with a dot, no currency), "currency" (string, ISO 4217 code), "language" (string, ISO 639-1 code), "reference_number" (string, invoice or reference number), "confidence" (number between 0 and 1).
Use an empty string when a value is not in the document.`

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model          string        `json:"model"`
	Messages       []chatMessage `json:"messages"`
	Temperature    float64       `json:"temperature"`
	ResponseFormat any           `json:"response_format,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// reply is the object the model is asked for; loose types because models
// write numbers as strings and the other way round.
type reply struct {
	Title           any `json:"title"`
	DocumentType    any `json:"document_type"`
	Tags            any `json:"tags"`
	Sender          any `json:"sender"`
	Date            any `json:"date"`
	Amount          any `json:"amount"`
	Currency        any `json:"currency"`
	Language        any `json:"language"`
	ReferenceNumber any `json:"reference_number"`
	IBAN            any `json:"iban"`
	Confidence      any `json:"confidence"`
}

// errNotJSON marks a reply that did not hold the JSON object; it is retried
// (models are not deterministic) and reported after the last attempt.
var errNotJSON = errors.New("reply is not a JSON object")

// Extract implements Provider.
func (o *OpenAI) Extract(ctx context.Context, text, filename string) (*docflow.Metadata, error) {
	if r := []rune(text); len(r) > o.cfg.MaxChars {
		text = string(r[:o.cfg.MaxChars])
	}
	req := chatRequest{
		Model: o.cfg.Model,
		Messages: []chatMessage{
			{Role: "system", Content: systemPrompt},
			{Role: "user", Content: fmt.Sprintf("Filename: %s\n\nDocument text:\n%s", filename, text)},
		},
	}
	if o.cfg.JSONMode == nil || *o.cfg.JSONMode {
		req.ResponseFormat = map[string]string{"type": "json_object"}
	}
	url := o.client.URL("chat/completions")
	var meta *docflow.Metadata
	err := openai.Post(ctx, o.client, url, openai.Header(o.cfg.APIKey, o.cfg.ExtraHeaders), req, func(resp *chatResponse) error {
		if len(resp.Choices) == 0 {
			return fmt.Errorf("reply has no choices")
		}
		m, err := ParseReply(resp.Choices[0].Message.Content)
		if err != nil {
			return err
		}
		meta = m
		return nil
	})
	if err != nil {
		if errors.Is(err, errNotJSON) {
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "metadata model %q did not return a JSON object: %v", o.cfg.Model, err)
		}
		return nil, fmt.Errorf("chat completions %s: %w", url, err)
	}
	meta.Provider = ProviderOpenAI
	return meta, nil
}

// ParseReply reads the model's answer: a JSON object, optionally inside a
// Markdown code fence. Prose, arrays and anything else are errNotJSON.
func ParseReply(content string) (*docflow.Metadata, error) {
	s := strings.TrimSpace(content)
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		if nl := strings.IndexByte(s, '\n'); nl >= 0 && !strings.HasPrefix(strings.TrimSpace(s[:nl]), "{") {
			s = s[nl+1:] // language tag line ("json")
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	if !strings.HasPrefix(s, "{") {
		return nil, fmt.Errorf("%w: starts with %q", errNotJSON, preview(s))
	}
	var r reply
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", errNotJSON, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: text after the object", errNotJSON)
	}
	m := &docflow.Metadata{
		Title:           str(r.Title),
		DocumentType:    str(r.DocumentType),
		Sender:          str(r.Sender),
		Date:            str(r.Date),
		Amount:          str(r.Amount),
		Currency:        str(r.Currency),
		Language:        str(r.Language),
		ReferenceNumber: str(r.ReferenceNumber),
		IBAN:            str(r.IBAN),
	}
	switch t := r.Tags.(type) {
	case []any:
		for _, x := range t {
			if s := str(x); s != "" {
				m.Tags = append(m.Tags, s)
			}
		}
	case string:
		for _, x := range strings.Split(t, ",") {
			m.Tags = append(m.Tags, x)
		}
	}
	switch c := r.Confidence.(type) {
	case float64:
		m.Confidence = c
	case string:
		fmt.Sscanf(strings.TrimSuffix(c, "%"), "%g", &m.Confidence)
	}
	Normalize(m)
	return m, nil
}

func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", x), "0"), ".")
	case bool:
		return ""
	}
	return ""
}

func preview(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
