package docflow

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Setting types (the spec's kinds; the UI kinds are hints for the settings page).
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
}

// Setting is a setting with its effective value and where it came from.
type Setting struct {
	SettingDef
	Value     string     `json:"value"`
	Source    string     `json:"source"` // db, env, default
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// SettingsService resolves effective values: database, then environment,
// then the catalogue default.
type SettingsService interface {
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

// SettingInt parses an integer setting, falling back to def.
func SettingInt(s SettingsService, key string, def int) int {
	v, err := strconv.Atoi(strings.TrimSpace(s.Get(key)))
	if err != nil {
		return def
	}
	return v
}

// SettingInt64 parses an int64 setting, falling back to def.
func SettingInt64(s SettingsService, key string, def int64) int64 {
	v, err := strconv.ParseInt(strings.TrimSpace(s.Get(key)), 10, 64)
	if err != nil {
		return def
	}
	return v
}

// SettingFloat parses a float setting, falling back to def.
func SettingFloat(s SettingsService, key string, def float64) float64 {
	v, err := strconv.ParseFloat(strings.TrimSpace(s.Get(key)), 64)
	if err != nil {
		return def
	}
	return v
}

// SettingBool parses a boolean setting (true/1/yes/on), falling back to def.
func SettingBool(s SettingsService, key string, def bool) bool {
	b, ok := ParseBool(s.Get(key))
	if !ok {
		return def
	}
	return b
}

// SettingList splits a comma-separated setting, dropping empty items.
func SettingList(s SettingsService, key string) []string {
	var out []string
	for _, p := range strings.Split(s.Get(key), ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
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

// ValidateSettingValue checks value against def's type and options.
func ValidateSettingValue(def *SettingDef, value string) error {
	switch def.Type {
	case TypeBool:
		if _, ok := ParseBool(value); !ok {
			return Errorf(EINVALID, "%s must be true or false", def.Key)
		}
	case TypeInt:
		if _, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err != nil {
			return Errorf(EINVALID, "%s must be an integer", def.Key)
		}
	case TypeFloat, TypeSlider:
		if _, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
			return Errorf(EINVALID, "%s must be a number", def.Key)
		}
	case TypeDropdown:
		if len(def.Options) > 0 && value != "" {
			for _, o := range def.Options {
				if o == value {
					return nil
				}
			}
			return Errorf(EINVALID, "%s must be one of: %s", def.Key, strings.Join(def.Options, ", "))
		}
	}
	return nil
}
