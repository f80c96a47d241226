package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"docflow"
)

// embedMetadataStep is embed_metadata: the title, subject, keywords and
// author go into the processed PDF's document properties, and a JSON
// sidecar of the metadata goes into the blob store. AI metadata records
// what was written ("pdf_properties") and the sidecar's key
// ("metadata_sidecar").
type embedMetadataStep struct{ d Deps }

var _ docflow.Step = (*embedMetadataStep)(nil)

func (s *embedMetadataStep) Type() string { return docflow.StepEmbedMetadata }

// PDFProperties are the document properties embed_metadata writes.
type PDFProperties struct {
	Title    string `json:"title,omitempty"`
	Subject  string `json:"subject,omitempty"`
	Keywords string `json:"keywords,omitempty"`
	Author   string `json:"author,omitempty"`
}

// propertiesOf derives the properties from the file's metadata.
func propertiesOf(f *docflow.File) PDFProperties {
	meta := f.AIMetadata
	str := func(k string) string { v, _ := meta[k].(string); return strings.TrimSpace(v) }
	var p PDFProperties
	if f.DocumentTitle != nil {
		p.Title = strings.TrimSpace(*f.DocumentTitle)
	}
	if p.Title == "" {
		p.Title = str("title")
	}
	if p.Title == "" {
		p.Title = strings.TrimSuffix(f.OriginalFilename, filepath.Ext(f.OriginalFilename))
	}
	var category, label string
	if c, ok := meta["classification"].(map[string]any); ok {
		category, _ = c["category"].(string)
		label, _ = c["label"].(string)
	}
	switch {
	case label != "" && category != "unknown":
		p.Subject = label
	case str("document_type") != "":
		p.Subject = str("document_type")
	}
	var kw []string
	seen := map[string]bool{}
	add := func(k string) {
		k = strings.TrimSpace(k)
		if k != "" && !seen[strings.ToLower(k)] {
			seen[strings.ToLower(k)] = true
			kw = append(kw, k)
		}
	}
	switch tags := meta["tags"].(type) {
	case []any:
		for _, t := range tags {
			if s, ok := t.(string); ok {
				add(s)
			}
		}
	case []string:
		for _, t := range tags {
			add(t)
		}
	}
	if category != "" && category != "unknown" {
		add(category)
	}
	p.Keywords = strings.Join(kw, ", ")
	p.Author = str("sender")
	return p
}

func (p PDFProperties) infoEntries() map[string]string {
	m := map[string]string{}
	for k, v := range map[string]string{"Title": p.Title, "Subject": p.Subject, "Keywords": p.Keywords, "Author": p.Author} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func (s *embedMetadataStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	f := in.File
	src, err := currentPDF(ctx, in)
	if err != nil {
		return nil, err
	}
	props := propertiesOf(f)
	dir, cleanup, err := workDir(s.d, "pdfmeta")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	out := filepath.Join(dir, "out.pdf")
	if err := writeProperties(src, out, props.infoEntries()); err != nil {
		return nil, err
	}
	blob, err := putFile(ctx, in.Blobs, out)
	if err != nil {
		return nil, err
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	delete(f.AIMetadata, "metadata_sidecar")
	pm, err := toMap(props)
	if err != nil {
		return nil, err
	}
	f.AIMetadata["pdf_properties"] = pm
	sidecar, err := json.MarshalIndent(map[string]any{
		"file_id":           f.ID,
		"original_filename": f.OriginalFilename,
		"filehash":          f.FileHash,
		"processed_blob":    blob.Key,
		"document_title":    f.DocumentTitle,
		"language":          f.Language,
		"ocr_quality_score": f.OCRQualityScore,
		"pdf_properties":    props,
		"metadata":          f.AIMetadata,
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode sidecar: %w", err)
	}
	side, err := in.Blobs.Put(ctx, bytes.NewReader(sidecar), 0)
	if err != nil {
		return nil, fmt.Errorf("store sidecar: %w", err)
	}
	f.ProcessedBlob = blob.Key
	f.AIMetadata["metadata_sidecar"] = side.Key
	keys := make([]string, 0, 4)
	for k := range props.infoEntries() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return &docflow.StepResult{
		Message: fmt.Sprintf("PDF properties written (%s); metadata sidecar %s", strings.Join(keys, ", "), side.Key[:12]),
		Bytes:   blob.Size,
	}, nil
}

// writeProperties copies the PDF at src to dst with the given Info
// dictionary entries. A PDF that pdfcpu cannot parse is a document problem.
func writeProperties(src, dst string, props map[string]string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = invalidf("PDF cannot be parsed to write its properties: %v", r)
		}
	}()
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open pdf: %w", err)
	}
	defer in.Close()
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Cmd = model.ADDPROPERTIES
	pctx, err := api.ReadValidateAndOptimize(in, conf)
	if err != nil {
		return invalidf("PDF cannot be parsed to write its properties: %v", err)
	}
	// NOTE: pdfcpu's api refuses Keywords as a custom property; the model
	// function writes any Info entry.
	if err := pdfcpu.PropertiesAdd(pctx, props); err != nil {
		return invalidf("PDF properties: %v", err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("write pdf: %w", err)
	}
	if err := api.Write(pctx, out, conf); err != nil {
		out.Close()
		return fmt.Errorf("write pdf: %w", err)
	}
	return out.Close()
}
