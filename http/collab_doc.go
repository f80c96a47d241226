package http

import "docflow"

// The request and response types of sharing, comments and annotations,
// and the documentation of their routes (/openapi.json).

type shareCreate struct {
	SharedWithUserID *string `json:"shared_with_user_id" openapi:"required" doc:"The user to share with (their user id)" example:"colleague@example.com"`
	Role             *string `json:"role" enum:"viewer,editor" doc:"Default viewer"`
}

type shareUpdate struct {
	Role *string `json:"role" openapi:"required" enum:"viewer,editor"`
}

// statusMessage is the answer of a change that returns no resource.
type statusMessage struct {
	Status  string `json:"status" example:"success"`
	Message string `json:"message"`
}

type commentCreate struct {
	Body     *string `json:"body" openapi:"required" doc:"The comment, up to 10,000 characters; @name mentions a user" example:"@colleague please check the total"`
	ParentID *int64  `json:"parent_id" doc:"The comment this one answers (null: a new thread)"`
}

type commentUpdate struct {
	Body *string `json:"body" openapi:"required"`
}

type commentResolve struct {
	IsResolved *bool `json:"is_resolved" openapi:"required"`
}

// commentList is a file's comments as threads.
type commentList struct {
	FileID   int64              `json:"file_id"`
	Comments []*docflow.Comment `json:"comments" doc:"Threads: top-level comments, oldest first, each with its replies"`
	Total    int                `json:"total" doc:"Comments and replies together"`
}

// annotationList is a file's annotations.
type annotationList struct {
	FileID      int64                 `json:"file_id"`
	Annotations []*docflow.Annotation `json:"annotations" doc:"By page, then oldest first"`
	Total       int                   `json:"total"`
}

var (
	docListShares = Doc{
		Summary:     "List a file's shares",
		Description: "The owner and administrators see whom the file is shared with and in which role.",
		Responses:   []Response{OK([]*docflow.Share{})},
		Errors:      []int{403, 404},
		Examples:    []Example{{Name: "list", Summary: "The shares of a file", Params: map[string]string{"file_id": "42"}}},
	}
	docCreateShare = Doc{
		Summary: "Share a file with a user",
		Description: "The owner gives a user the viewer or editor role (the role table in docs/api.md). A user who has a share " +
			"already gets the new role. Needs multi-user mode (400 otherwise).",
		Body:      shareCreate{},
		Responses: []Response{Created(docflow.Share{})},
		Errors:    []int{400, 403, 404},
		Examples: []Example{{Name: "editor", Summary: "Let a colleague edit the metadata", Params: map[string]string{"file_id": "42"},
			Body: map[string]any{"shared_with_user_id": "colleague@example.com", "role": "editor"}}},
	}
	docUpdateShare = Doc{
		Summary:   "Change the role of a share",
		Body:      shareUpdate{},
		Responses: []Response{OK(docflow.Share{})},
		Errors:    []int{400, 403, 404},
		Examples: []Example{{Name: "viewer", Summary: "Make a share read-only", Params: map[string]string{"file_id": "42", "share_id": "7"},
			Body: map[string]any{"role": "viewer"}}},
	}
	docDeleteShare = Doc{
		Summary:   "Remove a share",
		NoBody:    true,
		Responses: []Response{OK(statusMessage{})},
		Errors:    []int{400, 403, 404},
		Examples:  []Example{{Name: "remove", Summary: "End a colleague's access", Params: map[string]string{"file_id": "42", "share_id": "7"}}},
	}
	docSharedWith = Doc{
		Summary:     "Whom a file is shared with",
		Description: "Anyone who may view the file sees whom it is shared with, under their display names.",
		Responses:   []Response{OK([]docflow.SharedWith{})},
		Errors:      []int{404},
		Examples:    []Example{{Name: "list", Summary: "The people a file is shared with", Params: map[string]string{"file_id": "42"}}},
	}

	docListComments = Doc{
		Summary:   "List a file's comments as threads",
		Responses: []Response{OK(commentList{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "list", Summary: "The comment threads of a file", Params: map[string]string{"file_id": "42"}}},
	}
	docCreateComment = Doc{
		Summary: "Comment on a file",
		Description: "The owner, editors and administrators comment. An @mention notifies the user; the owner's and administrators' " +
			"mentions give a user who cannot see the file viewer access (multi-user mode), others' list them in not_notified.",
		Body:      commentCreate{},
		Responses: []Response{Created(commentAnswer{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "comment", Summary: "A new thread", Params: map[string]string{"file_id": "42"},
			Body: map[string]any{"body": "The total looks wrong, can you check it?"}}},
	}
	docUpdateComment = Doc{
		Summary:   "Edit a comment (its author only)",
		Body:      commentUpdate{},
		Responses: []Response{OK(commentAnswer{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "edit", Summary: "Correct a comment", Params: map[string]string{"file_id": "42", "comment_id": "3"},
			Body: map[string]any{"body": "The total is right after all."}}},
	}
	docDeleteComment = Doc{
		Summary:   "Delete a comment (its author only)",
		NoBody:    true,
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404},
		Examples:  []Example{{Name: "delete", Summary: "Delete one's comment", Params: map[string]string{"file_id": "42", "comment_id": "3"}}},
	}
	docResolveComment = Doc{
		Summary:   "Resolve or reopen a comment",
		Body:      commentResolve{},
		Responses: []Response{OK(docflow.Comment{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "resolve", Summary: "Mark a comment resolved", Params: map[string]string{"file_id": "42", "comment_id": "3"},
			Body: map[string]any{"is_resolved": true}}},
	}

	docListAnnotations = Doc{
		Summary:   "List a file's annotations",
		Responses: []Response{OK(annotationList{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "list", Summary: "The annotations of a file", Params: map[string]string{"file_id": "42"}}},
	}
	docCreateAnnotation = Doc{
		Summary: "Annotate a page of a file",
		Description: "page, x and y are required; x, y, width and height are fractions of the page (0 to 1) from its top left. " +
			"annotation_type is note (default), highlight, underline or strikethrough; color a hex colour.",
		Body:      annotationFields{},
		Responses: []Response{Created(docflow.Annotation{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "highlight", Summary: "Highlight the total", Params: map[string]string{"file_id": "42"},
			Body: map[string]any{"page": 1, "x": 0.12, "y": 0.81, "width": 0.3, "height": 0.025, "content": "Total due",
				"annotation_type": "highlight", "color": "#ffeb3b"}}},
	}
	docUpdateAnnotation = Doc{
		Summary:   "Change an annotation (its author only)",
		Body:      annotationFields{},
		Responses: []Response{OK(docflow.Annotation{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "move", Summary: "Move and recolour", Params: map[string]string{"file_id": "42", "annotation_id": "5"},
			Body: map[string]any{"y": 0.84, "color": "#4caf50"}}},
	}
	docDeleteAnnotation = Doc{
		Summary:   "Delete an annotation (its author only)",
		NoBody:    true,
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404},
		Examples:  []Example{{Name: "delete", Summary: "Remove one's annotation", Params: map[string]string{"file_id": "42", "annotation_id": "5"}}},
	}
)
