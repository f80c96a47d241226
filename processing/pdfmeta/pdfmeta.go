// Package pdfmeta writes a document's metadata into its PDF (the embed_metadata
// step): title, subject, keywords and author in the document information
// dictionary, plus a JSON sidecar of the full metadata for the blob store.
package pdfmeta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"docflow"
	"docflow/processing/classify"
	"docflow/processing/pdfconf"
	"docflow/processing/pdfsafe"
)

// Properties are the document-information fields written.
type Properties struct {
	Title    string
	Subject  string
	Author   string
	Keywords []string
}

// FromMetadata derives the properties: the title as is, the sender as
// author, the tags as keywords, and a subject naming the document type,
// sender and date ("Invoice from ACME GmbH, 2024-03-15").
func FromMetadata(m *docflow.Metadata, cls *docflow.Classification) Properties {
	if m == nil {
		m = &docflow.Metadata{}
	}
	p := Properties{Title: m.Title, Author: m.Sender}
	kind := ""
	switch {
	case cls != nil && cls.Category != "" && cls.Category != classify.Unknown:
		kind = cls.Label
	case m.DocumentType != "":
		kind = classify.Label(m.DocumentType)
		if kind == m.DocumentType {
			kind = strings.ReplaceAll(kind, "_", " ")
		}
	}
	var subj []string
	if kind != "" {
		subj = append(subj, kind)
	}
	if m.Sender != "" {
		if len(subj) > 0 {
			subj[0] += " from " + m.Sender
		} else {
			subj = append(subj, m.Sender)
		}
	}
	if m.Date != "" {
		subj = append(subj, m.Date)
	}
	p.Subject = strings.Join(subj, ", ")
	seen := map[string]bool{}
	for _, k := range append(append([]string{}, m.Tags...), m.DocumentType) {
		k = strings.TrimSpace(k)
		if k != "" && !seen[strings.ToLower(k)] {
			seen[strings.ToLower(k)] = true
			p.Keywords = append(p.Keywords, k)
		}
	}
	return p
}

// Embed writes in with the properties set, and without active content
// (processing/pdfsafe), to out (in and out may be the
// same path: the result is written to a temporary file and renamed).
// Empty fields are left as they are in the input.
func Embed(ctx context.Context, in, out string, p Properties) error {
	tmp := out + ".part"
	w, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("embed metadata: %w", err)
	}
	if err := EmbedTo(ctx, in, w, p); err != nil {
		w.Close()
		os.Remove(tmp)
		return err
	}
	if err := w.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("embed metadata: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("embed metadata: %w", err)
	}
	return nil
}

// EmbedTo is Embed writing the PDF to w, so that it can stream into a
// blob store without a temporary file. An unreadable PDF is EINVALID.
func EmbedTo(ctx context.Context, in string, w io.Writer, p Properties) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("embed metadata: %w", err)
	}
	defer f.Close()
	conf := pdfconf.New()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Cmd = model.ADDPROPERTIES
	pctx, err := api.ReadValidateAndOptimize(f, conf)
	if err != nil {
		return docflow.Errorf(docflow.EINVALID, "embed metadata: cannot read PDF: %v", err)
	}
	// The PDF written is the processed version: whatever made the input,
	// it leaves without active content.
	pdfsafe.Clean(pctx)
	props := map[string]string{}
	for k, v := range map[string]string{"Title": p.Title, "Subject": p.Subject, "Author": p.Author} {
		if v = clean(v); v != "" {
			props[k] = v
		}
	}
	if len(props) > 0 {
		if err := pdfcpu.PropertiesAdd(pctx, props); err != nil {
			return fmt.Errorf("embed metadata: properties: %w", err)
		}
	}
	var kw []string
	for _, k := range p.Keywords {
		if k = clean(k); k != "" {
			kw = append(kw, k)
		}
	}
	if len(kw) > 0 {
		if err := pdfcpu.KeywordsAdd(pctx, kw); err != nil {
			return fmt.Errorf("embed metadata: keywords: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := api.Write(pctx, w, conf); err != nil {
		return fmt.Errorf("embed metadata: write: %w", err)
	}
	return nil
}

// Read returns the document-information properties of a PDF.
func Read(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	defer f.Close()
	conf := pdfconf.New()
	conf.ValidationMode = model.ValidationRelaxed
	pctx, err := api.ReadContext(f, conf)
	if err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	out := map[string]string{}
	if pctx.Info == nil {
		return out, nil
	}
	d, err := pctx.DereferenceDict(*pctx.Info)
	if err != nil || d == nil {
		return out, nil
	}
	for k := range d {
		if s, err := pctx.DereferenceText(d[k]); err == nil {
			out[k] = s
		}
	}
	return out, nil
}

// clean keeps one line of printable text, at most 1000 characters.
func clean(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 1000 {
		s = string(r[:1000])
	}
	return s
}

// SidecarVersion is the version of the sidecar's layout.
const SidecarVersion = 1

// Sidecar is the JSON document stored beside the processed PDF.
type Sidecar struct {
	Version        int                     `json:"version"`
	Metadata       *docflow.Metadata       `json:"metadata"`
	Classification *docflow.Classification `json:"classification,omitempty"`
	// Extra carries what the step adds (file id, filename, OCR quality…).
	Extra map[string]any `json:"extra,omitempty"`
}

// SidecarJSON returns the indented JSON sidecar.
func SidecarJSON(m *docflow.Metadata, cls *docflow.Classification, extra map[string]any) ([]byte, error) {
	if m == nil {
		m = &docflow.Metadata{}
	}
	b, err := json.MarshalIndent(Sidecar{Version: SidecarVersion, Metadata: m, Classification: cls, Extra: extra}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	return append(b, '\n'), nil
}
