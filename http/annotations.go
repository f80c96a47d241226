package http

import (
	"github.com/valyala/fasthttp"

	"docflow"
)

// Annotations: readers of a file read them; the owner, editors and
// administrators add them (the comment/annotate right); only the author
// changes or deletes one.

// annotationFields is the request body of POST and PUT; absent or null
// fields are not given.
type annotationFields struct {
	Page           *int     `json:"page" min:"1"`
	X              *float64 `json:"x" min:"0" max:"1" doc:"Fraction of the page's width from its left"`
	Y              *float64 `json:"y" min:"0" max:"1" doc:"Fraction of the page's height from its top"`
	Width          *float64 `json:"width" min:"0" max:"1"`
	Height         *float64 `json:"height" min:"0" max:"1"`
	Content        *string  `json:"content"`
	AnnotationType *string  `json:"annotation_type"`
	Color          *string  `json:"color"`
}

// apply copies the given fields onto a.
func (r *annotationFields) apply(a *docflow.Annotation) {
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	if r.Page != nil {
		a.Page = *r.Page
	}
	set(&a.X, r.X)
	set(&a.Y, r.Y)
	set(&a.Width, r.Width)
	set(&a.Height, r.Height)
	if r.Content != nil {
		a.Content = *r.Content
	}
	if r.AnnotationType != nil {
		a.AnnotationType = *r.AnnotationType
	}
	if r.Color != nil {
		a.Color = *r.Color
	}
}

func (h *collabHandlers) listAnnotations(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	list, err := h.d.Annotations.ListAnnotations(RequestContext(c), f.ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, annotationList{FileID: f.ID, Annotations: list, Total: len(list)})
	return nil
}

func (h *collabHandlers) createAnnotation(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	var req annotationFields
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var missing []docflow.FieldError
	for _, r := range []struct {
		name  string
		given bool
	}{{"page", req.Page != nil}, {"x", req.X != nil}, {"y", req.Y != nil}} {
		if !r.given {
			missing = append(missing, docflow.FieldError{Field: r.name, Message: r.name + " is required"})
		}
	}
	if len(missing) > 0 {
		e := docflow.Errorf(docflow.EINVALID, "%s", missing[0].Message)
		e.Fields = missing
		return e
	}
	a := &docflow.Annotation{FileID: f.ID, UserID: h.actor(c), AnnotationType: docflow.DefaultAnnotationType,
		Color: docflow.DefaultAnnotationColor}
	req.apply(a)
	if err := docflow.CheckAnnotation(a); err != nil {
		return err
	}
	if err := h.d.Annotations.CreateAnnotation(RequestContext(c), a); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, a)
	return nil
}

// ownAnnotation finds the path's annotation of f and checks the current
// user made it: 404 unknown (or of another file), 403 another's.
func (h *collabHandlers) ownAnnotation(c *fasthttp.RequestCtx, f *docflow.File) (*docflow.Annotation, error) {
	id, err := pathID(c, "annotation_id")
	if err != nil {
		return nil, err
	}
	a, err := h.d.Annotations.FindAnnotation(RequestContext(c), f.ID, id)
	if err != nil {
		return nil, err
	}
	if a.UserID != h.actor(c) {
		return nil, docflow.Errorf(docflow.EFORBIDDEN, "Only the author of an annotation may change it")
	}
	return a, nil
}

func (h *collabHandlers) updateAnnotation(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	a, err := h.ownAnnotation(c, f)
	if err != nil {
		return err
	}
	var req annotationFields
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	req.apply(a)
	if err := docflow.CheckAnnotation(a); err != nil {
		return err
	}
	if err := h.d.Annotations.UpdateAnnotation(RequestContext(c), a); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, a)
	return nil
}

func (h *collabHandlers) deleteAnnotation(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	a, err := h.ownAnnotation(c, f)
	if err != nil {
		return err
	}
	if err := h.d.Annotations.DeleteAnnotation(RequestContext(c), f.ID, a.ID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
