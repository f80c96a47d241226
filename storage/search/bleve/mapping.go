package bleve

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/blevesearch/bleve/v2/mapping"

	"docflow"
)

// Analyzer and field names. Keyword fields carry the exact value for
// filters; the *_text fields are the same values analysed for full-text
// search.
const (
	textAnalyzer     = "docflow_text"
	filenameAnalyzer = "docflow_filename"
	alnumTokenizer   = "docflow_alnum"

	fOCRText          = "ocr_text"
	fTitle            = "document_title"
	fFilename         = "original_filename"
	fDocumentType     = "document_type"
	fDocumentTypeText = "document_type_text"
	fTags             = "tags"
	fTagsText         = "tags_text"
	fSender           = "sender"
	fSenderText       = "sender_text"
	fLanguage         = "language"
	fMimeType         = "mime_type"
	fOwner            = "owner_id"
	fSharedWith       = "shared_with"
	fTextLength       = "ocr_text_length"
	fCreatedAt        = "created_at"
)

// storedFields are the only stored values: what a hit returns and what the
// highlighter reads. Everything else is indexed only, which keeps segments
// small and bulk indexing fast.
func storedFields() []string {
	return []string{fTitle, fFilename, fDocumentType, fTags, fOCRText}
}

type searchField struct {
	name  string
	boost float64
}

// searchFields are the analysed fields a query runs against, with boosts:
// a word in the title or file name says more about a document than the same
// word somewhere in its OCR text.
func searchFields() []searchField {
	return []searchField{
		{fTitle, 3},
		{fFilename, 2},
		{fTagsText, 2},
		{fDocumentTypeText, 1.5},
		{fSenderText, 1.5},
		{fOCRText, 1},
	}
}

func newMapping() (*mapping.IndexMappingImpl, error) {
	m := mapping.NewIndexMapping()
	// Unicode word segmentation (UAX #29, like Elasticsearch's standard
	// tokenizer) and lower-casing; no stemming or stop words, because a
	// document's language is often unknown or wrong after OCR, and a query of
	// only common words must still find documents.
	if err := m.AddCustomAnalyzer(textAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     unicode.Name,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, fmt.Errorf("text analyzer: %w", err)
	}
	// File names join words with _ . - which UAX #29 keeps together
	// ("invoice_2023"); split on anything that is not a letter or digit.
	if err := m.AddCustomTokenizer(alnumTokenizer, map[string]any{
		"type":   regexp.Name,
		"regexp": `[\p{L}\p{M}\p{N}]+`,
	}); err != nil {
		return nil, fmt.Errorf("filename tokenizer: %w", err)
	}
	if err := m.AddCustomAnalyzer(filenameAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     alnumTokenizer,
		"token_filters": []any{lowercase.Name},
	}); err != nil {
		return nil, fmt.Errorf("filename analyzer: %w", err)
	}
	m.DefaultAnalyzer = textAnalyzer
	m.StoreDynamic = false
	m.IndexDynamic = false
	m.DocValuesDynamic = false

	text := func(name, analyzer string, store bool) *mapping.FieldMapping {
		f := mapping.NewTextFieldMapping()
		f.Name = name
		f.Analyzer = analyzer
		f.Store = store
		// Highlighting re-analyses the stored text of the page of hits, so
		// term vectors (positions and offsets of every token of every
		// document) are not needed; leaving them out roughly halves the
		// index and speeds up bulk indexing.
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	kw := func(name string, store bool) *mapping.FieldMapping {
		f := mapping.NewKeywordFieldMapping()
		f.Name = name
		f.Analyzer = keyword.Name
		f.Store = store
		f.IncludeTermVectors = false
		f.IncludeInAll = false
		f.DocValues = false
		// Filters need no scores: skip term frequencies and norms.
		f.SkipFreqNorm = true
		return f
	}

	doc := mapping.NewDocumentStaticMapping()
	doc.AddFieldMappingsAt(fOCRText, text(fOCRText, textAnalyzer, true))
	doc.AddFieldMappingsAt(fTitle, text(fTitle, textAnalyzer, true))
	doc.AddFieldMappingsAt(fFilename, text(fFilename, filenameAnalyzer, true))
	doc.AddFieldMappingsAt(fDocumentType, kw(fDocumentType, true), text(fDocumentTypeText, textAnalyzer, false))
	doc.AddFieldMappingsAt(fTags, kw(fTags, true), text(fTagsText, textAnalyzer, false))
	doc.AddFieldMappingsAt(fSender, kw(fSender, false), text(fSenderText, textAnalyzer, false))
	doc.AddFieldMappingsAt(fLanguage, kw(fLanguage, false))
	doc.AddFieldMappingsAt(fMimeType, kw(fMimeType, false))
	doc.AddFieldMappingsAt(fOwner, kw(fOwner, false))
	doc.AddFieldMappingsAt(fSharedWith, kw(fSharedWith, false))

	num := mapping.NewNumericFieldMapping()
	num.Name = fTextLength
	num.Store, num.IncludeInAll, num.DocValues = false, false, false
	doc.AddFieldMappingsAt(fTextLength, num)

	date := mapping.NewDateTimeFieldMapping()
	date.Name = fCreatedAt
	date.Store, date.IncludeInAll, date.DocValues = false, false, false
	doc.AddFieldMappingsAt(fCreatedAt, date)

	// No _all field: every query names its fields, and building the
	// composite field was an eighth of the indexing time.
	doc.AddSubDocumentMapping("_all", mapping.NewDocumentDisabledMapping())
	m.DefaultMapping = doc
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("validate mapping: %w", err)
	}
	return m, nil
}

// textLength is the OCR text length in characters, as the text_quality bands
// count it.
func textLength(s string) int { return utf8.RuneCountInString(s) }

// docID is the bleve document id of a file.
func docID(id int64) string { return strconv.FormatInt(id, 10) }

// bleveDoc is the value handed to the mapping. A map keeps the field names in
// one place (the constants above) instead of in struct tags.
func bleveDoc(d *docflow.SearchDocument) map[string]any {
	m := map[string]any{
		fOCRText:      d.OCRText,
		fTitle:        d.DocumentTitle,
		fFilename:     d.OriginalFilename,
		fDocumentType: d.DocumentType,
		fSender:       d.Sender,
		fLanguage:     d.Language,
		fMimeType:     d.MimeType,
		fOwner:        d.OwnerID,
		fTextLength:   float64(textLength(d.OCRText)),
	}
	if len(d.Tags) > 0 {
		m[fTags] = d.Tags
	}
	if len(d.SharedWith) > 0 {
		m[fSharedWith] = d.SharedWith
	}
	if !d.CreatedAt.IsZero() {
		m[fCreatedAt] = d.CreatedAt.UTC()
	}
	return m
}
