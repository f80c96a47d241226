package docflow

import (
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MetadataEdit is a person's change to a document's metadata (PATCH
// /api/files/{id}/metadata, and the GraphQL mutation over the same rule):
// nil fields stay as they are; an empty value clears the field. Check
// validates and normalises it, Apply writes it into a file.
//
// Where each field lives: Title is the file's document_title and the AI
// metadata's title; DocumentDate, Tags, Correspondent and DocumentType are
// the AI metadata's date, tags, sender and document_type; Fields are the
// other fields extraction fills (EditableMetadataFields), by key.
type MetadataEdit struct {
	Title         *string
	DocumentDate  *string
	Tags          *[]string
	Correspondent *string
	DocumentType  *string
	// Fields maps an extracted field to its new value ("" removes it).
	Fields map[string]string
}

// EditableMetadataFields are the extracted fields of the AI metadata a
// person may edit besides the named ones; the others (classification,
// confidence, provider, pdf_properties…) are the pipeline's.
var EditableMetadataFields = []string{"amount", "currency", "reference_number", "iban", "language"}

// Limits of an edited document's metadata.
const (
	MaxMetadataTitle  = 200 // characters, as extraction keeps
	MaxMetadataText   = 200 // correspondent and the free-text fields
	MaxMetadataTags   = 50
	MaxMetadataTag    = 40
	MaxDocumentType   = 64
	MaxReferenceField = 64
)

// Audit action of a metadata edit.
const AuditFileMetadataUpdate = "file.metadata_update"

// DocumentEventEncoder builds the outbox message of document.updated for
// f, whose fields changed changed, at at (streams.DocumentUpdated): the
// files API writes it in the transaction of the edit, since neither it nor
// storage builds messages.
type DocumentEventEncoder func(f *File, changed []string, at time.Time) (OutboxMessage, error)

// Empty reports whether e changes nothing at all.
func (e *MetadataEdit) Empty() bool {
	return e.Title == nil && e.DocumentDate == nil && e.Tags == nil && e.Correspondent == nil &&
		e.DocumentType == nil && len(e.Fields) == 0
}

// Check validates e and normalises its values in place (trimmed, dates as
// YYYY-MM-DD, tags lower-case and distinct, amounts with two decimals,
// currency and IBAN upper-case). Errors: EINVALID naming every bad field
// (title, document_date, tags, correspondent, document_type,
// ai_metadata.<key>), the first one's message as the detail.
func (e *MetadataEdit) Check() error {
	var errs []FieldError
	bad := func(field, msg string) { errs = append(errs, FieldError{Field: field, Message: msg}) }
	line := func(field string, v *string, max int) {
		if v == nil {
			return
		}
		*v = strings.TrimSpace(*v)
		switch {
		case utf8.RuneCountInString(*v) > max:
			bad(field, field+" must be at most "+strconv.Itoa(max)+" characters")
		case strings.IndexFunc(*v, unicode.IsControl) >= 0:
			bad(field, field+" must be one line without control characters")
		}
	}
	line("title", e.Title, MaxMetadataTitle)
	line("correspondent", e.Correspondent, MaxMetadataText)
	if e.DocumentDate != nil {
		*e.DocumentDate = strings.TrimSpace(*e.DocumentDate)
		if d := *e.DocumentDate; d != "" {
			if t, err := time.Parse(time.DateOnly, d); err != nil || t.Year() < 1000 {
				bad("document_date", "document_date must be a date as YYYY-MM-DD")
			}
		}
	}
	if e.DocumentType != nil {
		// The form extraction gives it: lower-case words joined by _.
		v := strings.Join(strings.Fields(strings.ToLower(strings.ReplaceAll(*e.DocumentType, "-", " "))), "_")
		*e.DocumentType = v
		if utf8.RuneCountInString(v) > MaxDocumentType || strings.IndexFunc(v, func(r rune) bool {
			return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
		}) >= 0 {
			bad("document_type", "document_type must be at most "+strconv.Itoa(MaxDocumentType)+" letters, digits and spaces")
		}
	}
	if e.Tags != nil {
		e.checkTags(bad)
	}
	for _, k := range sortedKeys(e.Fields) {
		field := "ai_metadata." + k
		if !slices.Contains(EditableMetadataFields, k) {
			bad(field, field+" cannot be edited (editable: "+strings.Join(EditableMetadataFields, ", ")+
				"; title, document_date, tags, correspondent and document_type have fields of their own)")
			continue
		}
		v, msg := checkExtractedField(k, strings.TrimSpace(e.Fields[k]))
		if msg != "" {
			bad(field, field+" "+msg)
			continue
		}
		e.Fields[k] = v
	}
	if len(errs) > 0 {
		err := Errorf(EINVALID, "%s", errs[0].Message)
		err.Fields = errs
		return err
	}
	return nil
}

func (e *MetadataEdit) checkTags(bad func(field, msg string)) {
	out := []string{}
	for _, t := range *e.Tags {
		t = strings.ToLower(strings.TrimSpace(t))
		switch {
		case t == "":
			continue
		case utf8.RuneCountInString(t) > MaxMetadataTag || strings.IndexFunc(t, unicode.IsControl) >= 0 || strings.Contains(t, ","):
			bad("tags", "each tag must be at most "+strconv.Itoa(MaxMetadataTag)+" characters, without commas or control characters")
			return
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > MaxMetadataTags {
		bad("tags", "tags must be at most "+strconv.Itoa(MaxMetadataTags)+" distinct tags")
		return
	}
	*e.Tags = out
}

// checkExtractedField normalises v, the new value of extracted field k
// (not empty: empty removes), or says what is wrong with it.
func checkExtractedField(k, v string) (string, string) {
	if v == "" {
		return "", ""
	}
	switch k {
	case "amount":
		r, ok := new(big.Rat).SetString(strings.ReplaceAll(v, ",", ""))
		if !ok || len(v) > 24 || strings.ContainsAny(v, "/eE") {
			return "", "must be a decimal number such as 1234.50"
		}
		return r.FloatString(2), ""
	case "currency":
		if len(v) != 3 || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsLetter(r) || r > unicode.MaxASCII }) >= 0 {
			return "", "must be a three-letter ISO 4217 code such as EUR"
		}
		return strings.ToUpper(v), ""
	case "iban":
		iban := strings.ToUpper(strings.ReplaceAll(v, " ", ""))
		if !ValidIBAN(iban) {
			return "", "must be a valid IBAN (its length or check digits are wrong)"
		}
		return iban, ""
	case "language":
		v = strings.ToLower(v)
		if len(v) != 2 || v[0] < 'a' || v[0] > 'z' || v[1] < 'a' || v[1] > 'z' {
			return "", "must be a two-letter ISO 639-1 code such as en"
		}
		return v, ""
	default: // reference_number
		if utf8.RuneCountInString(v) > MaxReferenceField || strings.IndexFunc(v, unicode.IsControl) >= 0 {
			return "", "must be one line of at most " + strconv.Itoa(MaxReferenceField) + " characters"
		}
		return v, ""
	}
}

// Apply writes the checked edit e into f and returns the fields it
// changed, in a stable order (the names Check reports); nothing when the
// edit repeats what f holds.
func (e *MetadataEdit) Apply(f *File) []string {
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	var changed []string
	setMeta := func(name, key string, v *string) {
		if v == nil {
			return
		}
		old, _ := f.AIMetadata[key].(string)
		_, present := f.AIMetadata[key]
		if *v == "" {
			if present {
				delete(f.AIMetadata, key)
				changed = append(changed, name)
			}
			return
		}
		if old != *v || !present {
			f.AIMetadata[key] = *v
			changed = append(changed, name)
		}
	}
	if e.Title != nil {
		old, meta := "", ""
		if f.DocumentTitle != nil {
			old = *f.DocumentTitle
		}
		meta, _ = f.AIMetadata["title"].(string)
		if old != *e.Title || meta != *e.Title {
			changed = append(changed, "title")
		}
		f.DocumentTitle = nil
		delete(f.AIMetadata, "title")
		if *e.Title != "" {
			t := *e.Title
			f.DocumentTitle = &t
			f.AIMetadata["title"] = t
		}
	}
	setMeta("document_date", "date", e.DocumentDate)
	if e.Tags != nil && !slices.Equal(metadataTags(f.AIMetadata["tags"]), *e.Tags) {
		if len(*e.Tags) == 0 {
			delete(f.AIMetadata, "tags")
		} else {
			tags := make([]any, len(*e.Tags))
			for i, t := range *e.Tags {
				tags[i] = t
			}
			f.AIMetadata["tags"] = tags
		}
		changed = append(changed, "tags")
	}
	setMeta("correspondent", "sender", e.Correspondent)
	setMeta("document_type", "document_type", e.DocumentType)
	for _, k := range sortedKeys(e.Fields) {
		v := e.Fields[k]
		setMeta("ai_metadata."+k, k, &v)
	}
	if v, ok := e.Fields["language"]; ok && f.Language != v {
		f.Language = v
	}
	return changed
}

// metadataTags reads the AI metadata's tags as strings.
func metadataTags(v any) []string {
	out := []string{}
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, t...)
	}
	return out
}

// ibanLengths holds the IBAN length per country (SEPA and common others).
var ibanLengths = map[string]int{
	"AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22,
	"DK": 18, "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GI": 23, "GR": 27,
	"HR": 21, "HU": 28, "IE": 22, "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20,
	"LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24,
	"SE": 24, "SI": 19, "SK": 24, "SM": 27, "VA": 22, "TR": 26, "AE": 23, "SA": 24,
	"IL": 23, "BR": 29, "UA": 29, "RS": 22, "BA": 20, "ME": 22, "MK": 19, "AL": 28,
}

// ValidIBAN reports whether s (spaces allowed) is an IBAN with a valid
// length for its country and a valid ISO 13616 mod-97 checksum: the one
// check of an IBAN, whether extraction found it or a person typed it.
func ValidIBAN(s string) bool {
	s = strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	if n, ok := ibanLengths[s[:2]]; ok && n != len(s) {
		return false
	}
	var digits strings.Builder
	for _, r := range s[4:] + s[:4] {
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			digits.WriteString(big.NewInt(int64(r - 'A' + 10)).String())
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(digits.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}
