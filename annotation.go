package docflow

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Annotation marks a region of one page of a file. X, Y, Width and Height are fractions of the page, from its
// top left corner.
type Annotation struct {
	ID             int64     `json:"id"`
	FileID         int64     `json:"file_id"`
	UserID         string    `json:"user_id"`
	Page           int       `json:"page"`
	X              float64   `json:"x"`
	Y              float64   `json:"y"`
	Width          float64   `json:"width"`
	Height         float64   `json:"height"`
	Content        string    `json:"content"`
	AnnotationType string    `json:"annotation_type"`
	Color          string    `json:"color"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// Annotation types.
const (
	AnnotationNote          = "note"
	AnnotationHighlight     = "highlight"
	AnnotationUnderline     = "underline"
	AnnotationStrikethrough = "strikethrough"
)

// AnnotationTypes lists the annotation types.
var AnnotationTypes = []string{AnnotationNote, AnnotationHighlight, AnnotationUnderline, AnnotationStrikethrough}

// Annotation defaults and caps (decisions.md).
const (
	DefaultAnnotationType  = AnnotationNote
	DefaultAnnotationColor = "#ffff00"
	MaxAnnotationContent   = 10_000
	MaxAnnotationPage      = 100_000
)

// regionSlack absorbs rounding in x + width and y + height (0.1 + 0.9).
const regionSlack = 1e-9

// CheckAnnotation validates a: page from 1, a region within the page
// (each of x, y, width, height from 0 to 1, x + width and y + height at
// most 1), a known type, a #rrggbb colour (lower-cased here) and content
// of at most MaxAnnotationContent characters. Every problem is named in
// the EINVALID error's fields.
func CheckAnnotation(a *Annotation) error {
	var fields []FieldError
	add := func(f, msg string) { fields = append(fields, FieldError{Field: f, Message: msg}) }
	inRange := true
	if a.Page < 1 || a.Page > MaxAnnotationPage {
		add("page", "page must be an integer from 1 to 100000")
	}
	for _, v := range []struct {
		name string
		val  float64
	}{{"x", a.X}, {"y", a.Y}, {"width", a.Width}, {"height", a.Height}} {
		if !(v.val >= 0 && v.val <= 1) {
			add(v.name, v.name+" must be a fraction of the page from 0 to 1")
			inRange = false
		}
	}
	if inRange {
		if a.X+a.Width > 1+regionSlack {
			add("width", "x + width must not exceed 1 (the page's right edge)")
		}
		if a.Y+a.Height > 1+regionSlack {
			add("height", "y + height must not exceed 1 (the page's bottom edge)")
		}
	}
	known := false
	for _, t := range AnnotationTypes {
		known = known || a.AnnotationType == t
	}
	if !known {
		add("annotation_type", "annotation_type must be one of "+strings.Join(AnnotationTypes, ", "))
	}
	if !validColor(a.Color) {
		add("color", "color must be a hex colour #rrggbb")
	} else {
		a.Color = strings.ToLower(a.Color)
	}
	if utf8.RuneCountInString(a.Content) > MaxAnnotationContent {
		add("content", "content must be at most 10000 characters")
	}
	if len(fields) == 0 {
		return nil
	}
	e := Errorf(EINVALID, "%s", fields[0].Message)
	e.Fields = fields
	return e
}

func validColor(c string) bool {
	if len(c) != 7 || c[0] != '#' {
		return false
	}
	for _, r := range c[1:] {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return false
		}
	}
	return true
}

// AnnotationStore keeps the annotations of files. Annotations are looked
// up within their file: one of another file is ENOTFOUND.
type AnnotationStore interface {
	// ListAnnotations returns the file's annotations by page, then
	// creation time.
	ListAnnotations(ctx context.Context, fileID int64) ([]*Annotation, error)
	// FindAnnotation returns one annotation of the file.
	FindAnnotation(ctx context.Context, fileID, id int64) (*Annotation, error)
	// CreateAnnotation stores a and sets its id and times.
	CreateAnnotation(ctx context.Context, a *Annotation) error
	// UpdateAnnotation writes a's page, region, content, type and colour
	// and sets its UpdatedAt.
	UpdateAnnotation(ctx context.Context, a *Annotation) error
	// DeleteAnnotation removes one annotation of the file.
	DeleteAnnotation(ctx context.Context, fileID, id int64) error
}
