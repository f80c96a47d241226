package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"docflow"
	"docflow/processing/pdfmeta"
)

// embedMetadataStep is embed_metadata: the title, subject, keywords and
// author go into the processed PDF's document properties
// (processing/pdfmeta), and a JSON sidecar of the metadata goes into the
// blob store. AI metadata records what was written ("pdf_properties") and
// the sidecar's blob key ("metadata_sidecar").
type embedMetadataStep struct{ d Deps }

var _ docflow.Step = (*embedMetadataStep)(nil)

func (s *embedMetadataStep) Type() string { return docflow.StepEmbedMetadata }

// metadataOf reads the extracted metadata and the classification back from
// the file's AI metadata.
func metadataOf(f *docflow.File) (*docflow.Metadata, *docflow.Classification) {
	m := &docflow.Metadata{}
	if b, err := json.Marshal(f.AIMetadata); err == nil {
		json.Unmarshal(b, m) //nolint:errcheck // a field of another shape stays empty
	}
	var cls *docflow.Classification
	if c, ok := f.AIMetadata["classification"]; ok {
		if b, err := json.Marshal(c); err == nil {
			cls = &docflow.Classification{}
			if json.Unmarshal(b, cls) != nil {
				cls = nil
			}
		}
	}
	if m.Title == "" && f.DocumentTitle != nil {
		m.Title = strings.TrimSpace(*f.DocumentTitle)
	}
	if m.Title == "" {
		m.Title = strings.TrimSuffix(f.OriginalFilename, filepath.Ext(f.OriginalFilename))
	}
	return m, cls
}

func (s *embedMetadataStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	f := in.File
	src, err := currentPDF(ctx, in)
	if err != nil {
		return nil, err
	}
	meta, cls := metadataOf(f)
	props := pdfmeta.FromMetadata(meta, cls)
	blob, err := embedToBlob(ctx, in.Blobs, src, props)
	if err != nil {
		if docflow.ErrorCode(err) == docflow.EINTERNAL && ctx.Err() == nil {
			// pdfcpu could not parse what poppler accepted: retrying
			// the same bytes cannot help.
			return nil, invalidf("write PDF properties: %v", err)
		}
		return nil, err
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	written := map[string]any{"title": props.Title, "subject": props.Subject, "author": props.Author,
		"keywords": strings.Join(props.Keywords, ", ")}
	sidecar, err := pdfmeta.SidecarJSON(meta, cls, map[string]any{
		"file_id":           f.ID,
		"original_filename": f.OriginalFilename,
		"filehash":          f.FileHash,
		"processed_blob":    blob.Key,
		"language":          f.Language,
		"ocr_quality_score": f.OCRQualityScore,
		"pdf_properties":    written,
	})
	if err != nil {
		return nil, err
	}
	side, err := in.Blobs.Put(ctx, strings.NewReader(string(sidecar)), 0)
	if err != nil {
		return nil, fmt.Errorf("store sidecar: %w", err)
	}
	f.ProcessedBlob = blob.Key
	f.AIMetadata["pdf_properties"] = written
	f.AIMetadata["metadata_sidecar"] = side.Key
	return &docflow.StepResult{
		Message: fmt.Sprintf("PDF properties written (title %q, subject %q, %d keywords); metadata sidecar stored",
			props.Title, props.Subject, len(props.Keywords)),
		Bytes: blob.Size,
	}, nil
}

// embedToBlob streams the PDF with its new properties straight into the
// blob store: no temporary file is written and read back.
func embedToBlob(ctx context.Context, blobs docflow.BlobStore, src string, props pdfmeta.Properties) (docflow.BlobInfo, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := pdfmeta.EmbedTo(ctx, src, pw, props)
		pw.CloseWithError(err)
		done <- err
	}()
	info, putErr := blobs.Put(ctx, pr, 0)
	// Put may stop early: unblock the writer before waiting for it.
	pr.CloseWithError(io.ErrClosedPipe)
	embedErr := <-done
	switch {
	case embedErr != nil && !errors.Is(embedErr, io.ErrClosedPipe):
		return info, embedErr
	case putErr != nil:
		return info, fmt.Errorf("store result: %w", putErr)
	}
	return info, embedErr
}
