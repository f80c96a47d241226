package http

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// fileEditor saves a change to a file together with the outbox messages
// that announce it, in one transaction (postgres.FileStore.EditFile).
type fileEditor interface {
	// EditFile runs fn on the locked file, saves it and writes the
	// messages fn returns. ENOTFOUND if the file does not exist.
	EditFile(ctx context.Context, id int64, fn func(*docflow.File) ([]docflow.OutboxMessage, error)) (*docflow.File, error)
}

// metadataEditFields are the keys of PATCH /api/files/{id}/metadata.
var metadataEditFields = []string{"title", "document_date", "tags", "correspondent", "document_type", "ai_metadata"}

// editMetadata is PATCH /api/files/{file_id}/metadata: the owner, an
// editor (or an administrator) changes the document's metadata. The change,
// when there is one, is saved with its document.updated event in one
// transaction, re-indexed for search (the files_changed trigger) and
// audited. A document still being processed is 409: its extraction would
// overwrite the edit.
func (h *filesHandlers) editMetadata(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessEdit)
	if err != nil {
		return err
	}
	edit, err := decodeMetadataEdit(c)
	if err != nil {
		return err
	}
	updated, changed, err := h.applyMetadataEdit(c, f, edit)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, metadataEdited{
		File: fileRecord{ID: updated.ID, FileHash: updated.FileHash, OriginalFilename: updated.OriginalFilename,
			StoredFilename: updated.StoredFilename, FileSize: updated.FileSize, MimeType: updated.MimeType,
			CreatedAt: updated.CreatedAt, OwnerID: updated.OwnerID, PipelineID: updated.PipelineID,
			DocumentTitle: updated.DocumentTitle, OCRQualityScore: updated.OCRQualityScore, AIMetadata: updated.AIMetadata,
			DuplicateOf: updated.DuplicateOf, TaskID: updated.TaskID},
		Changed: changed,
	})
	return nil
}

// applyMetadataEdit checks edit and saves it on f, which the route found
// the user may edit, with its event and audit entry; it returns the file
// and the fields that changed (also the GraphQL mutation updateMetadata's
// way).
func (h *filesHandlers) applyMetadataEdit(c *fasthttp.RequestCtx, f *docflow.File, edit *docflow.MetadataEdit) (*docflow.File, []string, error) {
	if err := edit.Check(); err != nil {
		return nil, nil, err
	}
	var changed []string
	updated, err := h.d.Edits.EditFile(RequestContext(c), f.ID, func(f *docflow.File) ([]docflow.OutboxMessage, error) {
		if f.Status == docflow.StatusPending || f.Status == docflow.StatusProcessing {
			return nil, docflow.Errorf(docflow.ECONFLICT,
				"Document %d is still being processed: edit its metadata once processing has ended", f.ID)
		}
		if changed = edit.Apply(f); len(changed) == 0 {
			return nil, nil
		}
		m, err := h.d.Announce(f, changed, h.s.cfg.Now())
		if err != nil {
			return nil, err
		}
		return []docflow.OutboxMessage{m}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(changed) > 0 {
		h.s.auditFile(c, docflow.AuditFileMetadataUpdate, updated.ID, "changed "+strings.Join(changed, ", ")+" of "+fileLabel(updated))
	}
	if changed == nil {
		changed = []string{}
	}
	return updated, changed, nil
}

// decodeMetadataEdit reads the body of a metadata edit: a JSON object of
// metadataEditFields, where null clears a field like an empty value does.
// An unknown key or a value of the wrong type is 422 naming it.
func decodeMetadataEdit(c *fasthttp.RequestCtx) (*docflow.MetadataEdit, error) {
	var raw map[string]json.RawMessage
	if err := decodeJSON(c, &raw); err != nil {
		return nil, err
	}
	return metadataEditFrom(raw)
}

// metadataEditFrom reads a metadata edit from the body's keys (nil: the
// body was not an object); 422 naming each bad key.
func metadataEditFrom(raw map[string]json.RawMessage) (*docflow.MetadataEdit, error) {
	if raw == nil {
		return nil, invalid("body", "The body must be a JSON object of %s", strings.Join(metadataEditFields, ", "))
	}
	var errs []docflow.FieldError
	bad := func(field, msg string) { errs = append(errs, docflow.FieldError{Field: field, Message: msg}) }
	str := func(field string, v json.RawMessage) *string {
		s := ""
		if string(v) != "null" {
			if err := json.Unmarshal(v, &s); err != nil {
				bad(field, field+" must be a string or null")
				return nil
			}
		}
		return &s
	}
	e := &docflow.MetadataEdit{}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := raw[k]
		switch k {
		case "title":
			e.Title = str(k, v)
		case "document_date":
			e.DocumentDate = str(k, v)
		case "correspondent":
			e.Correspondent = str(k, v)
		case "document_type":
			e.DocumentType = str(k, v)
		case "tags":
			tags := []string{}
			if string(v) != "null" && json.Unmarshal(v, &tags) != nil {
				bad(k, "tags must be an array of strings")
				continue
			}
			e.Tags = &tags
		case "ai_metadata":
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(v, &fields); err != nil {
				bad(k, "ai_metadata must be an object of the extracted fields to change ("+
					strings.Join(docflow.EditableMetadataFields, ", ")+")")
				continue
			}
			e.Fields = map[string]string{}
			for fk, fv := range fields {
				// A number is taken as written (an amount).
				var n json.Number
				if json.Unmarshal(fv, &n) == nil {
					e.Fields[fk] = n.String()
				} else if s := str("ai_metadata."+fk, fv); s != nil {
					e.Fields[fk] = *s
				}
			}
		default:
			bad(k, "unknown field "+k+" (fields: "+strings.Join(metadataEditFields, ", ")+")")
		}
	}
	if len(errs) > 0 {
		err := docflow.Errorf(docflow.EINVALID, "%s", errs[0].Message)
		err.Fields = errs
		return nil, err
	}
	if e.Empty() {
		return nil, invalid("body", "Nothing to change: give at least one of %s", strings.Join(metadataEditFields, ", "))
	}
	return e, nil
}
