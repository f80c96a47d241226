package http

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

type jsonTypeError struct {
	Field string
	Type  string
}

func (e *jsonTypeError) Error() string { return e.Field + " must be " + e.Type }

// jsonUnmarshal decodes one JSON value, refusing invalid UTF-8 and trailing data.
func jsonUnmarshal(body []byte, v any) error {
	if !utf8.Valid(body) {
		return errors.New("body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			field := ute.Field
			if field == "" {
				field = "body"
			}
			return &jsonTypeError{Field: field, Type: jsonTypeName(ute.Type.Kind().String())}
		}
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func jsonTypeName(kind string) string {
	switch kind {
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return "of another type"
}
