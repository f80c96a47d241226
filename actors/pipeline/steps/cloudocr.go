package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"docflow"
	"docflow/processing/quality"
)

// azureAPIVersion is the Document Intelligence REST version asked for.
const azureAPIVersion = "2024-11-30"

// azurePoll is the wait between polls of an analysis (Azure suggests
// honouring Retry-After, which it sets to 1 s or more).
var azurePoll = time.Second

// cloud reads the PDF with Azure Document Intelligence's prebuilt-read model.
// Without an endpoint and key it fails at once with a message naming the
// settings: a retry cannot configure them.
func (s *ocrStep) cloud(ctx context.Context, in *docflow.StepInput, pdf string) (*docflow.StepResult, error) {
	endpoint := strings.TrimRight(strings.TrimSpace(s.d.Settings.Get("AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT")), "/")
	key := strings.TrimSpace(s.d.Settings.Get("AZURE_DOCUMENT_INTELLIGENCE_KEY"))
	if endpoint == "" || key == "" {
		return nil, invalidf("cloud OCR was requested but no provider is configured: set AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT and AZURE_DOCUMENT_INTELLIGENCE_KEY")
	}
	body, err := os.ReadFile(pdf)
	if err != nil {
		return nil, fmt.Errorf("read pdf: %w", err)
	}
	text, conf, pages, err := azureRead(ctx, &http.Client{Timeout: 2 * time.Minute}, endpoint, key, body)
	if err != nil {
		return nil, err
	}
	f := in.File
	f.OCRText = text
	score := quality.Score(text, conf)
	f.OCRQualityScore = &score
	return &docflow.StepResult{
		Message: fmt.Sprintf("Cloud OCR (Azure Document Intelligence) read %d pages: %d characters, quality %.0f", pages, len(text), score),
		Bytes:   int64(len(body)),
	}, nil
}

type azureResult struct {
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	AnalyzeResult *struct {
		Content string `json:"content"`
		Pages   []struct {
			Words []struct {
				Confidence float64 `json:"confidence"`
			} `json:"words"`
		} `json:"pages"`
	} `json:"analyzeResult"`
}

// azureRead submits the document and polls the operation until it ends.
// It returns the text, the mean word confidence (0–100) and the page count.
func azureRead(ctx context.Context, client *http.Client, endpoint, key string, pdf []byte) (string, float64, int, error) {
	url := endpoint + "/documentintelligence/documentModels/prebuilt-read:analyze?api-version=" + azureAPIVersion
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(pdf))
	if err != nil {
		return "", 0, 0, invalidf("AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT is not a valid URL: %v", err)
	}
	req.Header.Set("Ocp-Apim-Subscription-Key", key)
	req.Header.Set("Content-Type", "application/pdf")
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, 0, fmt.Errorf("cloud OCR: %w", err)
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "", 0, 0, invalidf("cloud OCR refused the key (HTTP %d): check AZURE_DOCUMENT_INTELLIGENCE_KEY", resp.StatusCode)
	case resp.StatusCode == http.StatusBadRequest:
		return "", 0, 0, invalidf("cloud OCR refused the document: %s", strings.TrimSpace(string(msg)))
	case resp.StatusCode != http.StatusAccepted:
		return "", 0, 0, fmt.Errorf("cloud OCR: HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	op := resp.Header.Get("Operation-Location")
	if op == "" {
		return "", 0, 0, fmt.Errorf("cloud OCR: reply has no Operation-Location")
	}
	for {
		select {
		case <-ctx.Done():
			return "", 0, 0, ctx.Err()
		case <-time.After(azurePoll):
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, op, nil)
		if err != nil {
			return "", 0, 0, fmt.Errorf("cloud OCR: %w", err)
		}
		req.Header.Set("Ocp-Apim-Subscription-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			return "", 0, 0, fmt.Errorf("cloud OCR: %w", err)
		}
		var r azureResult
		err = json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&r)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", 0, 0, fmt.Errorf("cloud OCR: poll: HTTP %d", resp.StatusCode)
		}
		if err != nil {
			return "", 0, 0, fmt.Errorf("cloud OCR: poll: %w", err)
		}
		switch strings.ToLower(r.Status) {
		case "notstarted", "running":
			continue
		case "succeeded":
			if r.AnalyzeResult == nil {
				return "", 0, 0, fmt.Errorf("cloud OCR: result is missing")
			}
			var sum float64
			var n int
			for _, p := range r.AnalyzeResult.Pages {
				for _, w := range p.Words {
					sum += w.Confidence
					n++
				}
			}
			conf := quality.NoConfidence
			if n > 0 {
				conf = 100 * sum / float64(n)
			}
			return r.AnalyzeResult.Content, conf, len(r.AnalyzeResult.Pages), nil
		default:
			detail := r.Status
			if r.Error != nil {
				detail = r.Error.Code + ": " + r.Error.Message
			}
			return "", 0, 0, invalidf("cloud OCR failed: %s", detail)
		}
	}
}
