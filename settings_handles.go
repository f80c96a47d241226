package docflow

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SettingsReader is what a setting handle reads through: the effective
// value of a key, as SettingsStore.Get gives it (a process's environment
// before its database is open gives it too).
type SettingsReader interface {
	Get(key string) string
}

// Handle reads one setting of the catalogue as a T: code names a setting
// by its handle (StepTimeout.Get(s)), never by its key, so a misspelt
// setting does not compile. Every handle is declared once, in
// settings_catalogue.go, from the catalogue entry it adds (key, default,
// type, check, description…): a key's name, default and metadata are in
// one place. The aliases below name the kinds.
type Handle[T any] struct {
	def *SettingDef
	// parse turns a value into a T; errUnset when the value is blank and
	// the kind takes blank as "not set" (all but strings and lists).
	parse func(string) (T, error)
}

// The kinds of settings, by what Get returns.
type (
	// StringSetting is a setting's text as stored: "" is a value (an
	// empty ADMIN_GROUP_NAME names no group), not "use the default".
	StringSetting = Handle[string]
	// BoolSetting accepts the spellings of ParseBool.
	BoolSetting = Handle[bool]
	// IntSetting is a decimal integer.
	IntSetting = Handle[int]
	// Int64Setting is a decimal integer of 64 bits (sizes in bytes).
	Int64Setting = Handle[int64]
	// FloatSetting is a decimal number.
	FloatSetting = Handle[float64]
	// ListSetting is a comma-separated list; blank items are dropped and
	// "" is the empty list.
	ListSetting = Handle[[]string]
	// DurationSetting is a span of time: an integer of seconds (catalogue
	// type integer), or a duration such as 90, 90s or 1h30m (bare numbers
	// are seconds; catalogue type string), as the setting's entry says.
	DurationSetting = Handle[time.Duration]
	// DurationsSetting is a comma-separated list of durations (see
	// ParseDurations); an empty list is "not set".
	DurationsSetting = Handle[[]time.Duration]
)

// errUnset is a blank value of a kind for which blank means "not set".
var errUnset = errors.New("not set")

// Key is the setting's name in the environment and the settings API.
func (h Handle[T]) Key() string { return h.def.Key }

// Default is the catalogue default as a T (the zero T when the catalogue
// has none).
func (h Handle[T]) Default() T {
	v, err := h.parse(h.def.Default)
	if err != nil {
		var zero T
		return zero
	}
	return v
}

// Get returns the setting's effective value in s (database, environment,
// catalogue default: see SettingsStore), or the catalogue default when
// that is not set or not a T (a store refuses such a value, and a process
// refuses to start with one, so this is the last line). A nil s gives the
// default.
func (h Handle[T]) Get(s SettingsReader) T {
	if v, ok := h.Lookup(s); ok {
		return v
	}
	return h.Default()
}

// Lookup returns the effective value in s and true, or false when it is
// not set or not a T: for a setting without a catalogue default whose
// consumer decides (SESSION_COOKIE_SECURE follows BASE_URL's scheme).
func (h Handle[T]) Lookup(s SettingsReader) (T, bool) {
	if s == nil {
		var zero T
		return zero, false
	}
	v, err := h.parse(s.Get(h.def.Key))
	return v, err == nil
}

// Validate checks the effective value in s against the setting's type and
// check; EINVALID names the setting and the value and says why.
func (h Handle[T]) Validate(s SettingsReader) error {
	if s == nil {
		return nil
	}
	return ValidateSettingValue(h.def, s.Get(h.def.Key))
}

// Positive is h's value in s, or its default when the value is not above
// zero: for a consumer to which zero would mean "never" or "none".
func Positive[T int | int64 | float64 | time.Duration](h Handle[T], s SettingsReader) T {
	if v := h.Get(s); v > 0 {
		return v
	}
	return h.Default()
}

// catalogue is every setting's entry, in the order of declaration: each
// handle adds its own while the package is initialised, and nothing
// changes it after.
var catalogue []catalogued

type catalogued struct {
	def *SettingDef
	// parses reports whether the handle reads v as a value (not as
	// "unset", not as an error); kinds are the catalogue types it may
	// carry. Both are for the test that the handles and the entries
	// agree.
	parses func(v string) bool
	kinds  []string
}

// declare adds d to the catalogue and returns its handle; d.Type is kinds[0]
// when d leaves it empty.
func declare[T any](d SettingDef, parse func(string) (T, error), kinds ...string) Handle[T] {
	if d.Type == "" {
		d.Type = kinds[0]
	}
	h := Handle[T]{def: &d, parse: parse}
	catalogue = append(catalogue, catalogued{def: h.def, kinds: kinds,
		parses: func(v string) bool { _, err := parse(v); return err == nil }})
	return h
}

// Catalogue returns every setting docflow reads, in the order the
// settings page lists them. Each call returns a fresh slice, so callers
// may not change what others see.
func Catalogue() []SettingDef {
	out := make([]SettingDef, len(catalogue))
	for i, c := range catalogue {
		out[i] = *c.def
		out[i].Options = slices.Clone(c.def.Options)
	}
	return out
}

func stringSetting(d SettingDef) StringSetting {
	return declare(d, func(v string) (string, error) { return v, nil }, TypeString, TypeDropdown, TypeModelPicker, TypeAutocomp)
}

func boolSetting(d SettingDef) BoolSetting {
	return declare(d, func(v string) (bool, error) {
		b, ok := ParseBool(v)
		if !ok {
			return false, errUnset
		}
		return b, nil
	}, TypeBool)
}

func intSetting(d SettingDef) IntSetting {
	return declare(d, func(v string) (int, error) { return strconv.Atoi(strings.TrimSpace(v)) }, TypeInt)
}

func int64Setting(d SettingDef) Int64Setting {
	return declare(d, func(v string) (int64, error) { return strconv.ParseInt(strings.TrimSpace(v), 10, 64) }, TypeInt)
}

func floatSetting(d SettingDef) FloatSetting {
	return declare(d, func(v string) (float64, error) { return strconv.ParseFloat(strings.TrimSpace(v), 64) }, TypeFloat, TypeSlider)
}

func listSetting(d SettingDef) ListSetting {
	return declare(d, func(v string) ([]string, error) { return splitSettingList(v), nil }, TypeList, TypeMulti)
}

// secondsSetting is an integer of seconds read as a duration.
func secondsSetting(d SettingDef) DurationSetting {
	return declare(d, func(v string) (time.Duration, error) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return time.Duration(n) * time.Second, err
	}, TypeInt)
}

// durationSetting is a duration written as 90, 90s or 1h30m.
func durationSetting(d SettingDef) DurationSetting {
	return declare(d, func(v string) (time.Duration, error) {
		if v = strings.TrimSpace(v); v == "" {
			return 0, errUnset
		}
		return parseDuration(v)
	}, TypeString)
}

func durationsSetting(d SettingDef) DurationsSetting {
	return declare(d, func(v string) ([]time.Duration, error) {
		ds, err := ParseDurations(v)
		if err == nil && len(ds) == 0 {
			return nil, errUnset
		}
		return ds, err
	}, TypeList)
}

// splitSettingList splits a comma-separated value, dropping blank items.
func splitSettingList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
