package docflow

import (
	"errors"
	"path"
	"strconv"
	"strings"
	"unicode"
)

// FilenameFields are the values of a destination's filename_template
// placeholders for one document.
type FilenameFields struct {
	ID    int64
	Title string
	// Date is the document's date, YYYY-MM-DD ("" when unknown: the
	// upload's date is used by the caller).
	Date     string
	Category string
	// OriginalFilename is the name the document is delivered as: the
	// uploaded name, with the extension of the delivered file (".pdf"
	// for a processed document).
	OriginalFilename string
	// Ext is the delivered file's extension with its dot (".pdf"), or "".
	Ext string
}

// RenderFilename fills template's placeholders ({title}, {date},
// {original_filename}, {id}, {category}; FilenamePlaceholders) with f's
// values and returns a file name that stays inside the destination's
// folder: in each value, path separators (and their look-alikes) become
// "-" and control characters go, so "../../etc/passwd" as a title is the
// name "..-..-etc-passwd" cleaned by CleanFilename (no "..", no leading
// dot, at most 255 bytes). A result without f.Ext gets it appended; an
// empty one is "document-<id>". An empty template is
// DefaultFilenameTemplate.
func RenderFilename(template string, f FilenameFields) string {
	if strings.TrimSpace(template) == "" {
		template = DefaultFilenameTemplate
	}
	values := map[string]string{
		"title":             f.Title,
		"date":              f.Date,
		"original_filename": f.OriginalFilename,
		"id":                strconv.FormatInt(f.ID, 10),
		"category":          f.Category,
	}
	var b strings.Builder
	rest := template
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		key := rest[i+1 : i+j]
		if v, ok := values[key]; ok {
			b.WriteString(placeholderValue(v))
		} else {
			b.WriteString(rest[i : i+j+1])
		}
		rest = rest[i+j+1:]
	}
	name := strings.TrimSpace(b.String())
	if name == "" || strings.Trim(name, ". -_") == "" {
		name = "document-" + strconv.FormatInt(f.ID, 10)
	}
	if f.Ext != "" && !strings.EqualFold(path.Ext(name), f.Ext) {
		name += f.Ext
	}
	name = CleanFilename(name)
	if name == "upload" {
		name = "document-" + strconv.FormatInt(f.ID, 10) + f.Ext
	}
	return name
}

// placeholderValue makes a placeholder's value safe inside a file name:
// separators and their look-alikes become "-", control and invisible
// format characters go, runs of white space become one space.
func placeholderValue(v string) string {
	v = strings.ToValidUTF8(v, "")
	v = strings.Map(func(r rune) rune {
		switch r {
		case '/', '\\', '\uff0f', '\uff3c', '\u2215', '\u29f5', '\u29f8', '\u29f9', '\ufe68':
			return '-'
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, v)
	return strings.Join(strings.Fields(v), " ")
}

// CheckDestinationName is the rule every destination client applies to
// DestinationDoc.Name before it writes: one path element (no "/", "\"
// or NUL, not "." or ".."), no control characters, 1–255 bytes. Names
// made by RenderFilename pass.
func CheckDestinationName(name string) error {
	switch {
	case name == "":
		return errors.New("empty file name")
	case len(name) > maxFilenameBytes:
		return errors.New("file name longer than 255 bytes")
	case name == "." || name == "..":
		return errors.New("file name " + name + " is not allowed")
	case strings.ContainsAny(name, "/\\\x00"):
		return errors.New("file name with a path separator")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return errors.New("file name with a control character")
		}
	}
	return nil
}
