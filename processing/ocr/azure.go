package ocr

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/internal/netguard"
	"docflow/processing/internal/httpx"
	"docflow/processing/quality"
)

// CloudOCR reads a document with a remote service.
type CloudOCR interface {
	// Recognize returns the document's text, its page count and the mean
	// word confidence (0–100, or -1 when the service reports none).
	Recognize(ctx context.Context, pdf string) (*CloudResult, error)
	// Name identifies the provider (stored as Result.Engine).
	Name() string
}

// CloudResult is a cloud provider's reading.
type CloudResult struct {
	Text           string
	Pages          int
	MeanConfidence float64
}

// errCloudNotConfigured is the message (with EUNAVAILABLE) when cloud OCR
// is requested without a provider.
const errCloudNotConfigured = "cloud OCR is not configured: set AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT and AZURE_DOCUMENT_INTELLIGENCE_KEY"

func (e *Engine) cloud(ctx context.Context, pdf string, req Request) (*Result, error) {
	if e.opts.Cloud == nil {
		return nil, docflow.Errorf(docflow.EUNAVAILABLE, "%s", errCloudNotConfigured)
	}
	cr, err := e.opts.Cloud.Recognize(ctx, pdf)
	if err != nil {
		return nil, fmt.Errorf("cloud ocr: %w", err)
	}
	res := &Result{Text: strings.TrimSpace(cr.Text), Pages: cr.Pages, OCRPages: cr.Pages, MeanConfidence: cr.MeanConfidence, Engine: e.opts.Cloud.Name()}
	res.Quality = quality.Score(res.Text, res.MeanConfidence)
	if req.Searchable != "" {
		// The provider returns text, not a PDF: the processed version stays
		// the converted PDF and the text goes to the index.
		if err := copyFile(pdf, req.Searchable); err != nil {
			return nil, err
		}
		res.Searchable = true
	}
	return res, nil
}

// AzureConfig configures Azure AI Document Intelligence (prebuilt-read).
type AzureConfig struct {
	// Endpoint is the resource URL, e.g.
	// https://<name>.cognitiveservices.azure.com
	Endpoint   string
	Key        string
	APIVersion string        // default 2024-11-30
	Model      string        // default prebuilt-read
	Timeout    time.Duration // the whole analysis including polling; default 5 min
	// PollInterval is used when the service sends no Retry-After
	// (default 1 s).
	PollInterval time.Duration
	// MaxBytes refuses larger files before upload (default 500 MB, the
	// service's limit on paid tiers).
	MaxBytes int64
	// HTTPClient makes the requests (default a netguard client: the
	// endpoint is the operator's, so a private address is allowed, with
	// the environment's proxy); a client without a Timeout is given 2
	// minutes per request.
	HTTPClient *http.Client
}

// Azure is the CloudOCR for Azure AI Document Intelligence's REST API:
// POST …/documentModels/prebuilt-read:analyze, then poll the
// Operation-Location until the analysis succeeds.
type Azure struct {
	cfg AzureConfig
}

var _ CloudOCR = (*Azure)(nil)

// NewAzure checks the configuration; without endpoint or key it returns
// EUNAVAILABLE with the message naming the settings.
func NewAzure(cfg AzureConfig) (*Azure, error) {
	if strings.TrimSpace(cfg.Endpoint) == "" || strings.TrimSpace(cfg.Key) == "" {
		return nil, docflow.Errorf(docflow.EUNAVAILABLE, "%s", errCloudNotConfigured)
	}
	if cfg.APIVersion == "" {
		cfg.APIVersion = "2024-11-30"
	}
	if cfg.Model == "" {
		cfg.Model = "prebuilt-read"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 500 << 20
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true},
			Proxy: true, Redirects: 10})
	}
	if cfg.HTTPClient.Timeout == 0 {
		c := *cfg.HTTPClient
		c.Timeout = 2 * time.Minute
		cfg.HTTPClient = &c
	}
	return &Azure{cfg: cfg}, nil
}

// Name implements CloudOCR.
func (a *Azure) Name() string { return "azure_document_intelligence" }

type azureOperation struct {
	Status string `json:"status"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	AnalyzeResult *struct {
		Content string `json:"content"`
		Pages   []struct {
			PageNumber int `json:"pageNumber"`
			Words      []struct {
				Confidence float64 `json:"confidence"`
			} `json:"words"`
		} `json:"pages"`
	} `json:"analyzeResult"`
}

// Recognize implements CloudOCR.
func (a *Azure) Recognize(ctx context.Context, pdf string) (*CloudResult, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	f, err := os.Open(pdf)
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	if st.Size() > a.cfg.MaxBytes {
		return nil, docflow.Errorf(docflow.EINVALID, "document is %d bytes, more than the cloud OCR limit of %d", st.Size(), a.cfg.MaxBytes)
	}
	url := httpx.JoinURL(a.cfg.Endpoint, fmt.Sprintf("documentintelligence/documentModels/%s:analyze?api-version=%s", a.cfg.Model, a.cfg.APIVersion))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, f)
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	req.ContentLength = st.Size()
	req.Header.Set("Content-Type", "application/pdf")
	req.Header.Set("Ocp-Apim-Subscription-Key", a.cfg.Key)
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("azure analyze: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err := httpx.CheckStatus(resp); err != nil {
		return nil, fmt.Errorf("azure analyze: %w", err)
	}
	if resp.StatusCode != http.StatusAccepted {
		return nil, fmt.Errorf("azure analyze: unexpected status %d", resp.StatusCode)
	}
	op := resp.Header.Get("Operation-Location")
	if op == "" {
		return nil, fmt.Errorf("azure analyze: reply has no Operation-Location")
	}
	wait := retryAfter(resp, a.cfg.PollInterval)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("azure poll: %w", ctx.Err())
		case <-t.C:
		}
		res, next, err := a.poll(ctx, op)
		if err != nil {
			return nil, err
		}
		if res != nil {
			return res, nil
		}
		wait = next
	}
}

// poll fetches the operation once; nil result means "still running, ask
// again after the returned wait".
func (a *Azure) poll(ctx context.Context, op string) (*CloudResult, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, op, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("azure poll: %w", err)
	}
	req.Header.Set("Ocp-Apim-Subscription-Key", a.cfg.Key)
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("azure poll: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		return nil, retryAfter(resp, a.cfg.PollInterval), nil
	}
	if err := httpx.CheckStatus(resp); err != nil {
		return nil, 0, fmt.Errorf("azure poll: %w", err)
	}
	var o azureOperation
	if err := json.NewDecoder(io.LimitReader(resp.Body, httpx.MaxResponseBytes)).Decode(&o); err != nil {
		return nil, 0, fmt.Errorf("azure poll: decode: %w", err)
	}
	switch strings.ToLower(o.Status) {
	case "notstarted", "running":
		return nil, retryAfter(resp, a.cfg.PollInterval), nil
	case "succeeded":
		if o.AnalyzeResult == nil {
			return nil, 0, fmt.Errorf("azure: succeeded without analyzeResult")
		}
		r := &CloudResult{Text: o.AnalyzeResult.Content, Pages: len(o.AnalyzeResult.Pages), MeanConfidence: quality.NoConfidence}
		var sum float64
		var n int
		for _, p := range o.AnalyzeResult.Pages {
			for _, w := range p.Words {
				sum += w.Confidence
				n++
			}
		}
		if n > 0 {
			r.MeanConfidence = 100 * sum / float64(n)
		}
		return r, 0, nil
	case "failed", "canceled":
		msg := o.Status
		if o.Error != nil {
			msg = o.Error.Code + ": " + o.Error.Message
		}
		return nil, 0, docflow.Errorf(docflow.EBADGATEWAY, "azure document intelligence analysis failed: %s", msg)
	}
	return nil, 0, fmt.Errorf("azure poll: unknown status %q", o.Status)
}

func retryAfter(resp *http.Response, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, 30*time.Second)
	}
	return def
}
