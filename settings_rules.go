package docflow

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MinAdminPasswordLength is the shortest ADMIN_PASSWORD accepted while
// AUTH_ENABLED is true: the local admin account is every instance's
// administrator under a well-known name, so its password is all that
// guards it.
const MinAdminPasswordLength = 12

// SettingRule refuses a combination of settings that each pass their own
// check but that the service cannot use safely together (SettingDef.Check
// sees one value only). Check reads effective values through value and
// says why in words that name the settings.
type SettingRule struct {
	// Keys are the settings the rule reads: a change to one of them is
	// checked against it.
	Keys  []string
	Check func(value func(key string) (v, source string)) error
}

// SettingRules are the rules across settings, checked at start (a process
// refuses to start while one fails) and when a setting they read is
// changed through the settings API (422).
func SettingRules() []SettingRule {
	return []SettingRule{
		{Keys: []string{"AUTH_ENABLED", "ADMIN_PASSWORD"}, Check: adminPasswordRule},
	}
}

// adminPasswordRule: with authentication on, ADMIN_PASSWORD is empty (no
// local admin sign-in) or at least MinAdminPasswordLength characters.
func adminPasswordRule(value func(key string) (string, string)) error {
	auth, _ := value("AUTH_ENABLED")
	if on, _ := ParseBool(auth); !on {
		return nil
	}
	pw, src := value("ADMIN_PASSWORD")
	if n := utf8.RuneCountInString(pw); n > 0 && n < MinAdminPasswordLength {
		return fmt.Errorf("ADMIN_PASSWORD (a hidden value of %d characters, %s) must be at least %d characters while AUTH_ENABLED is true: choose a longer one, or leave it empty to turn the local admin sign-in off",
			n, settingSource(src), MinAdminPasswordLength)
	}
	return nil
}

// CheckSettingRules checks every rule of SettingRules against the values
// value returns, with their source (db, env, default). The error lists
// each rule that fails.
func CheckSettingRules(value func(key string) (v, source string)) error {
	var bad []string
	for _, r := range SettingRules() {
		if err := r.Check(value); err != nil {
			bad = append(bad, err.Error())
		}
	}
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return errors.New("settings: " + bad[0])
	}
	return fmt.Errorf("%d settings rules fail:\n  %s", len(bad), strings.Join(bad, "\n  "))
}

// CheckSettingRulesFor checks the rules that read key, as if key had the
// value v from source (and the others value's), for a change through the
// settings API: EINVALID saying why.
func CheckSettingRulesFor(key, v, source string, value func(key string) (string, string)) error {
	with := func(k string) (string, string) {
		if k == key {
			return v, source
		}
		return value(k)
	}
	for _, r := range SettingRules() {
		for _, k := range r.Keys {
			if k != key {
				continue
			}
			if err := r.Check(with); err != nil {
				return Errorf(EINVALID, "%s", err.Error())
			}
		}
	}
	return nil
}
