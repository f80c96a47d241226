package http

// The documentation of PATCH /api/files/{file_id}/metadata (/openapi.json):
// the body decodeMetadataEdit reads, and the answer.

// metadataEditRequest documents the body of a metadata edit; the handler
// reads the keys itself (decodeMetadataEdit), so that null and an absent
// key differ.
type metadataEditRequest struct {
	Title         *string           `json:"title" doc:"The document's title; null or \"\" clears it" example:"Invoice March 2024"`
	DocumentDate  *string           `json:"document_date" doc:"The document's date (YYYY-MM-DD); null or \"\" clears it" example:"2024-03-31"`
	Tags          *[]string         `json:"tags" doc:"The tags, replacing the present ones; null or [] clears them"`
	Correspondent *string           `json:"correspondent" doc:"Who sent or issued the document"`
	DocumentType  *string           `json:"document_type" doc:"The kind of document (invoice, contract…)"`
	AIMetadata    map[string]string `json:"ai_metadata" doc:"Extracted fields to change: amount, currency, reference_number, iban, language; \"\" removes one"`
}

// metadataEdited is the answer of a metadata edit.
type metadataEdited struct {
	File    fileRecord `json:"file"`
	Changed []string   `json:"changed" doc:"The fields that changed (empty: the edit changed nothing, and no event was sent)"`
}

var docEditMetadata = Doc{
	Summary: "Edit a file's metadata",
	Description: "The owner, an editor or an administrator corrects the title, date, tags, correspondent, " +
		"document type or extracted fields. At least one key is needed; an unknown key or a value of the wrong " +
		"type is 422 naming it. A change is saved with its document.updated event, re-indexed for search and " +
		"audited. A document still being processed is 409: edit it once processing has ended.",
	Body:      metadataEditRequest{},
	Responses: []Response{OK(metadataEdited{})},
	Errors:    []int{400, 404, 409},
	Examples: []Example{{Name: "title", Summary: "Correct the title and tags",
		Params: map[string]string{"file_id": "42"},
		Body:   map[string]any{"title": "Invoice March 2024", "tags": []string{"tax", "2024"}}}},
}
