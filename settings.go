package docflow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Setting types (the value kinds; the UI kinds are hints for the settings page).
const (
	TypeString      = "string"
	TypeBool        = "boolean"
	TypeInt         = "integer"
	TypeFloat       = "float"
	TypeList        = "list"
	TypeDropdown    = "dropdown"
	TypeSlider      = "slider"
	TypeMulti       = "multi-select"
	TypeModelPicker = "model picker"
	TypeAutocomp    = "autocomplete"
)

// SettingDef describes one setting of the catalogue.
type SettingDef struct {
	Key             string   `json:"key"`
	Category        string   `json:"category"`
	Description     string   `json:"description"`
	Type            string   `json:"type"`
	Default         string   `json:"-"`
	Sensitive       bool     `json:"sensitive"`
	Required        bool     `json:"required"`
	RestartRequired bool     `json:"restart_required"`
	Options         []string `json:"options"`
	// Check refuses a value of the right type that the service still
	// cannot use (out of range, a malformed URL…); nil accepts any.
	Check SettingCheck `json:"-"`
}

// Setting is a setting with its effective value and where it came from.
type Setting struct {
	SettingDef
	Value     string     `json:"value"`
	Source    string     `json:"source"` // db, env, default
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
	// EnvOnly: the process reads it from its environment before the
	// database opens (DATABASE_URL, WORKDIR, SESSION_SECRET, LOG_FORMAT), so it cannot
	// be set through the settings API.
	EnvOnly bool `json:"env_only"`
}

// Audit actions of the settings API: the detail names the value, or only
// that it changed when the setting is sensitive.
const (
	AuditSettingUpdate = "setting.update"
	AuditSettingDelete = "setting.delete"
)

// SettingsStore resolves effective values: database, then environment,
// then the catalogue default. Code reads a setting through its handle
// (StepTimeout.Get(s)), which parses the value Get returns.
type SettingsStore interface {
	// Get returns the effective value of key ("" for unknown keys).
	Get(key string) string
	// Lookup returns the effective setting; ENOTFOUND for keys outside the catalogue.
	Lookup(ctx context.Context, key string) (*Setting, error)
	List(ctx context.Context) ([]*Setting, error)
	// Set stores a database value (encrypted when sensitive). EINVALID when
	// the value does not fit the type; ENOTFOUND for unknown keys.
	Set(ctx context.Context, key, value string) (*Setting, error)
	// Delete removes the database value so env or default applies.
	Delete(ctx context.Context, key string) error
}

// ParseBool accepts the spellings users write in environment files.
func ParseBool(v string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y", "t":
		return true, true
	case "0", "false", "no", "off", "n", "f":
		return false, true
	}
	return false, false
}

// ValidateSettingValue checks value against def's type, options and
// Check. The EINVALID error names the setting and the value (only its
// length when the setting is sensitive) and says why it cannot be used.
func ValidateSettingValue(def *SettingDef, value string) error {
	if why := settingProblem(def, value); why != "" {
		return Errorf(EINVALID, "%s: %s", shownSetting(def, value), why)
	}
	return nil
}

// settingProblem says why value cannot be used for def ("" when it can).
func settingProblem(def *SettingDef, value string) string {
	// An empty value of a setting without a default means "not set" (its
	// consumer decides, as SESSION_COOKIE_SECURE from BASE_URL).
	typ := def.Type
	if value == "" && def.Default == "" {
		typ = TypeString
	}
	switch typ {
	case TypeBool:
		if _, ok := ParseBool(value); !ok {
			return "must be true or false"
		}
	case TypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil {
			return "must be an integer"
		}
	case TypeFloat, TypeSlider:
		if _, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
			return "must be a number"
		}
	case TypeDropdown:
		if len(def.Options) > 0 && value != "" && !slices.Contains(def.Options, value) {
			return "must be one of: " + strings.Join(def.Options, ", ")
		}
	}
	if def.Check != nil {
		if err := def.Check(value); err != nil {
			return err.Error()
		}
	}
	return ""
}

// shownSetting is KEY="value" for messages; a sensitive value shows only
// its length, or a URL without its password.
func shownSetting(def *SettingDef, value string) string {
	if def.Sensitive && strings.Contains(value, "://") {
		return fmt.Sprintf("%s=%q", def.Key, redactedURL(value))
	}
	if def.Sensitive && value != "" {
		return fmt.Sprintf("%s (a hidden value of %d characters)", def.Key, len(value))
	}
	return fmt.Sprintf("%s=%q", def.Key, value)
}

// settingSource names the source of an effective value in messages.
func settingSource(src string) string {
	switch src {
	case "db":
		return "set through the settings API"
	case "env":
		return "from the environment"
	case "default":
		return "the built-in default"
	}
	return src
}

// ValidateSettings checks the effective value of every setting of defs,
// as value returns it with its source (db, env, default). The error lists
// each value that cannot be used: the setting, the value, where it came
// from and why, so a process can refuse to start with it.
func ValidateSettings(defs []SettingDef, value func(key string) (v, source string)) error {
	var bad []string
	for i := range defs {
		def := &defs[i]
		v, src := value(def.Key)
		if why := settingProblem(def, v); why != "" {
			bad = append(bad, fmt.Sprintf("%s (%s): %s", shownSetting(def, v), settingSource(src), why))
		}
	}
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return errors.New("setting " + bad[0])
	}
	return fmt.Errorf("%d settings cannot be used:\n  %s", len(bad), strings.Join(bad, "\n  "))
}
