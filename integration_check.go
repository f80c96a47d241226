package docflow

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math"
	"net"
	"net/mail"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IntegrationInput is what a client sends to create or change an
// integration, before checking.
type IntegrationInput struct {
	// Direction may be empty: the type decides it. When given it must be
	// the type's.
	Direction       string
	IntegrationType string
	Config          map[string]any
	// Credentials nil means "not given" (an update keeps the stored
	// ones); an empty map is checked like any other.
	Credentials map[string]any
}

// CheckedIntegration is an IntegrationInput that passed CheckIntegration.
type CheckedIntegration struct {
	Type IntegrationType
	// Config holds every given key, converted (integers as int64), with
	// the defaults of absent keys filled in.
	Config map[string]any
	// Credentials is nil when the input gave none; otherwise the given
	// non-empty values as text.
	Credentials map[string]string
}

// CheckIntegration checks in against the catalogue (decisions.md,
// Integrations): the type (upper-cased) must exist and the direction match
// it; config and credentials may hold only the type's keys, and must hold
// the required ones; each value must fit its key (ports 1–65535,
// poll_interval 10–86400, enums, http(s) URLs, SHA256: fingerprints, PEM
// certificates, filename placeholders…). An empty string or null counts as
// absent. Every problem is reported in one EINVALID error whose Fields
// name them ("config.port", "credentials.password", "integration_type").
func CheckIntegration(in IntegrationInput) (*CheckedIntegration, error) {
	var errs fieldErrors
	typ, ok := LookupIntegrationType(strings.ToUpper(strings.TrimSpace(in.IntegrationType)))
	if !ok {
		if strings.TrimSpace(in.IntegrationType) == "" {
			errs.add("integration_type", "integration_type is required")
		} else {
			errs.add("integration_type", "unknown integration_type %q; supported: %s", in.IntegrationType, strings.Join(IntegrationTypeNames(), ", "))
		}
		return nil, errs.err()
	}
	if d := strings.ToUpper(strings.TrimSpace(in.Direction)); d != "" && d != typ.Direction {
		errs.add("direction", "direction of %s is %s", typ.Type, typ.Direction)
	}
	out := &CheckedIntegration{Type: typ, Config: map[string]any{}}
	for _, name := range sortedKeys(in.Config) {
		if _, ok := typ.Key(name); !ok {
			errs.add("config."+name, "unknown key config.%s for %s; allowed: %s", name, typ.Type, keyNames(typ.Config))
		}
	}
	for _, k := range typ.Config {
		field := "config." + k.Name
		v, given := in.Config[k.Name]
		if s, isStr := v.(string); v == nil || (isStr && strings.TrimSpace(s) == "") {
			given = false
		}
		if !given {
			if k.Required {
				errs.add(field, "%s is required for %s", field, typ.Type)
			} else if k.Default != nil {
				out.Config[k.Name] = k.Default
			}
			continue
		}
		cv, msg := checkValue(k, v, false)
		if msg != "" {
			errs.add(field, "%s %s", field, msg)
			continue
		}
		out.Config[k.Name] = cv
	}
	if in.Credentials != nil {
		out.Credentials = map[string]string{}
		for _, name := range sortedKeys(in.Credentials) {
			if _, ok := typ.CredentialKey(name); !ok {
				if len(typ.Credentials) == 0 {
					errs.add("credentials."+name, "%s takes no credentials", typ.Type)
				} else {
					errs.add("credentials."+name, "unknown key credentials.%s for %s; allowed: %s", name, typ.Type, keyNames(typ.Credentials))
				}
			}
		}
		for _, k := range typ.Credentials {
			field := "credentials." + k.Name
			v, given := in.Credentials[k.Name]
			if s, isStr := v.(string); v == nil || (isStr && s == "") {
				given = false
			}
			if !given {
				if k.Required {
					errs.add(field, "%s is required for %s", field, typ.Type)
				}
				continue
			}
			cv, msg := checkValue(k, v, true)
			if msg != "" {
				errs.add(field, "%s %s", field, msg)
				continue
			}
			out.Credentials[k.Name] = cv.(string)
		}
		if len(typ.OneOfCredentials) > 0 {
			found := false
			for _, name := range typ.OneOfCredentials {
				if out.Credentials[name] != "" {
					found = true
				}
			}
			if !found {
				errs.add("credentials."+typ.OneOfCredentials[0], "%s needs credentials.%s", typ.Type, strings.Join(typ.OneOfCredentials, " or credentials."))
			}
		}
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// checkValue converts v for k, or says what is wrong with it. Credentials
// are text: a port may be given as a number and is kept as its digits.
func checkValue(k IntegrationKey, v any, credential bool) (any, string) {
	switch k.Kind {
	case KeyBool:
		b, ok := v.(bool)
		if !ok {
			return nil, "must be true or false"
		}
		return b, ""
	case KeyInt, KeyPort:
		lo, hi := k.Min, k.Max
		if k.Kind == KeyPort {
			lo, hi = 1, 65535
		}
		n, ok := asInt(v, credential)
		if !ok {
			return nil, "must be an integer"
		}
		if n < lo || n > hi {
			return nil, fmt.Sprintf("must be between %d and %d", lo, hi)
		}
		if credential {
			return strconv.FormatInt(n, 10), ""
		}
		return n, ""
	}
	s, ok := v.(string)
	if !ok {
		return nil, "must be a string"
	}
	maxLen := k.MaxLen
	if maxLen == 0 {
		maxLen = maxKeyText
	}
	if len(s) > maxLen {
		return nil, fmt.Sprintf("must be at most %d bytes", maxLen)
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return nil, "must be UTF-8 text without NUL"
	}
	if credential && k.Kind == KeyString {
		return s, ""
	}
	switch k.Kind {
	case KeyEnum:
		s = strings.ToLower(strings.TrimSpace(s))
		for _, e := range k.Enum {
			if e == s {
				return s, ""
			}
		}
		return nil, "must be one of " + strings.Join(k.Enum, ", ")
	case KeyURL:
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return nil, "must be an http or https URL with a host"
		}
		return s, ""
	case KeyHost:
		s = strings.TrimSpace(s)
		if !validHost(s) {
			return nil, "must be a host name or IP address (no scheme, port or path)"
		}
		return s, ""
	case KeyPath:
		if hasControl(s) {
			return nil, "must not contain control characters"
		}
		return s, ""
	case KeyLocalPath:
		if hasControl(s) {
			return nil, "must not contain control characters"
		}
		for _, el := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
			if el == ".." {
				return nil, "must not contain .. (it is a folder inside your local destination folder)"
			}
		}
		return s, ""
	case KeyFolder:
		if hasControl(s) {
			return nil, "must not contain control characters"
		}
		return s, ""
	case KeyFingerprint:
		s = strings.TrimSpace(s)
		b64, ok := strings.CutPrefix(s, "SHA256:")
		if !ok {
			return nil, "must be SHA256:<base64> (as ssh-keygen -lf prints it)"
		}
		raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(b64, "="))
		if err != nil || len(raw) != 32 {
			return nil, "must be SHA256:<base64> of 32 bytes (as ssh-keygen -lf prints it)"
		}
		return s, ""
	case KeyPEM:
		if msg := checkPEM(s); msg != "" {
			return nil, msg
		}
		return s, ""
	case KeyTemplate:
		if msg := checkTemplate(s); msg != "" {
			return nil, msg
		}
		return s, ""
	case KeyEmailList:
		var addrs []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			a, err := mail.ParseAddress(p)
			if err != nil {
				return nil, fmt.Sprintf("has an invalid address %q", p)
			}
			addrs = append(addrs, a.Address)
		}
		if len(addrs) == 0 {
			return nil, "must name at least one address"
		}
		return strings.Join(addrs, ","), ""
	}
	return s, ""
}

func asInt(v any, fromText bool) (int64, bool) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		if fromText {
			i, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
			return i, err == nil
		}
	}
	return 0, false
}

func validHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	if ip := net.ParseIP(strings.Trim(s, "[]")); ip != nil {
		return true
	}
	for _, label := range strings.Split(strings.TrimSuffix(s, "."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return false
			}
		}
	}
	return true
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, unicode.IsControl) >= 0
}

// checkPEM accepts one or more CERTIFICATE blocks that parse, and nothing
// else.
func checkPEM(s string) string {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Sprintf("holds a PEM %s block; only CERTIFICATE blocks are accepted", b.Type)
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return "holds a certificate that does not parse: " + err.Error()
		}
		n++
	}
	if n == 0 || strings.TrimSpace(string(rest)) != "" {
		return "must be PEM: -----BEGIN CERTIFICATE----- blocks only"
	}
	return ""
}

// checkTemplate accepts text with {placeholder}s from FilenamePlaceholders.
func checkTemplate(s string) string {
	if strings.ContainsAny(s, "/\\") {
		return "must be a file name, without / or \\"
	}
	rest := s
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return "has a { without its }"
		}
		name := rest[i+1 : i+j]
		ok := false
		for _, p := range FilenamePlaceholders {
			ok = ok || p == name
		}
		if !ok {
			return fmt.Sprintf("has an unknown placeholder {%s}; allowed: {%s}", name, strings.Join(FilenamePlaceholders, "}, {"))
		}
		rest = rest[i+j+1:]
	}
	return ""
}

type fieldErrors []FieldError

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// err is one EINVALID error holding every field error, or nil.
func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	msgs := make([]string, len(f))
	for i, e := range f {
		msgs[i] = e.Message
	}
	e := Errorf(EINVALID, "%s", strings.Join(msgs, "; "))
	e.Fields = f
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func keyNames(keys []IntegrationKey) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}
