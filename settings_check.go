package docflow

import (
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SettingCheck refuses a value the service cannot use and says why, in
// words that follow "KEY=value: " (ValidateSettingValue names the setting
// and the value). It runs after the type check of SettingDef.Type. Checks
// of string settings accept "": an empty value means "not set".
type SettingCheck func(value string) error

// IntBetween accepts integers from lo to hi inclusive.
func IntBetween(lo, hi int64) SettingCheck {
	return func(v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return errors.New("must be an integer")
		}
		if n < lo || n > hi {
			return fmt.Errorf("must be %s", rangeText(strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10), hi == maxInt))
		}
		return nil
	}
}

// ZeroOrAtLeast accepts 0 (meaning "none") or integers from lo up.
func ZeroOrAtLeast(lo int64) SettingCheck {
	at := AtLeast(lo)
	return func(v string) error {
		if strings.TrimSpace(v) == "0" {
			return nil
		}
		if err := at(v); err != nil {
			return fmt.Errorf("%w, or 0 for none", err)
		}
		return nil
	}
}

// AtLeast accepts integers from lo up.
func AtLeast(lo int64) SettingCheck { return IntBetween(lo, maxInt) }

const maxInt = int64(^uint64(0) >> 1)

// FloatBetween accepts numbers from lo to hi inclusive.
func FloatBetween(lo, hi float64) SettingCheck {
	return func(v string) error {
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return errors.New("must be a number")
		}
		if f < lo || f > hi {
			return fmt.Errorf("must be %s", rangeText(strconv.FormatFloat(lo, 'f', -1, 64), strconv.FormatFloat(hi, 'f', -1, 64), false))
		}
		return nil
	}
}

func rangeText(lo, hi string, open bool) string {
	if open {
		return "at least " + lo
	}
	return "between " + lo + " and " + hi
}

// Durations accepts a comma-separated list of positive durations (see
// ParseDurations); "" is the empty list.
func Durations() SettingCheck {
	return func(v string) error {
		_, err := ParseDurations(v)
		return err
	}
}

// Duration accepts one positive duration ("90", "90s", "1h30m"; bare
// numbers are seconds).
func Duration() SettingCheck {
	return func(v string) error {
		_, err := parseDuration(strings.TrimSpace(v))
		return err
	}
}

// ParseDurations parses "60s,300s,15m" (bare numbers are seconds) into
// positive durations; "" is nil. Equal durations are kept: a list of retry
// delays may wait the same time twice.
func ParseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		d, err := parseDuration(p)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func parseDuration(p string) (time.Duration, error) {
	text := p
	if n, err := strconv.ParseFloat(p, 64); err == nil {
		text = strconv.FormatFloat(n, 'f', -1, 64) + "s"
	}
	d, err := time.ParseDuration(text)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (write 90, 90s, 1m30s or 250ms)", p)
	case d <= 0:
		return 0, fmt.Errorf("%q is not a positive duration", p)
	case d < time.Millisecond:
		return 0, fmt.Errorf("%q is shorter than a millisecond", p)
	}
	return d, nil
}

// URLs accepts one absolute URL with one of schemes and a host.
func URLs(schemes ...string) SettingCheck {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return checkURL(strings.TrimSpace(v), schemes)
	}
}

// URLList accepts a comma-separated list of URLs, as URLs does.
func URLList(schemes ...string) SettingCheck {
	return func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if err := checkURL(p, schemes); err != nil {
				return err
			}
		}
		return nil
	}
}

func checkURL(v string, schemes []string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", redactedURL(v), unwrapURLError(err))
	}
	if u.Scheme == "" || (len(schemes) > 0 && !slices.Contains(schemes, strings.ToLower(u.Scheme))) {
		if len(schemes) == 0 {
			return fmt.Errorf("%q must be a URL with a scheme, such as https://", redactedURL(v))
		}
		if len(schemes) == 1 {
			return fmt.Errorf("%q must be a %s:// URL", redactedURL(v), schemes[0])
		}
		return fmt.Errorf("%q must be a URL starting with %s://", redactedURL(v), strings.Join(schemes, ":// or "))
	}
	if u.Host == "" {
		return fmt.Errorf("%q names no host", redactedURL(v))
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return fmt.Errorf("%q: %v", redactedURL(v), err)
		}
	}
	return nil
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// redactedURL hides a password in a URL quoted back in a message.
func redactedURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		// Unparsed: hide whatever may be credentials (up to the last
		// "@"), and, as below, whatever follows the host.
		i := strings.Index(v, "://")
		if i < 0 {
			return v
		}
		head, rest := v[:i+3], v[i+3:]
		if j := strings.LastIndex(rest, "@"); j >= 0 {
			head, rest = head+"xxxxx@", rest[j+1:]
		}
		if k := strings.IndexAny(rest, "/?#"); k >= 0 {
			rest = rest[:k] + "/..."
		}
		return head + rest
	}
	// A path or query may hold a token (a notification URL's, say): only
	// the scheme, user and host are shown.
	if u.Path != "" || u.RawQuery != "" || u.Opaque != "" || u.Fragment != "" {
		u.Path, u.RawPath, u.RawQuery, u.Opaque, u.Fragment = "/...", "", "", "", ""
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	return u.String()
}

// PostgresURL accepts what DATABASE_URL may hold: a postgres:// or
// postgresql:// URL (a Unix socket by its host parameter:
// postgres:///docflow?host=/var/run/postgresql), or a key=value
// connection string.
func PostgresURL() SettingCheck {
	return func(v string) error {
		v = strings.TrimSpace(v)
		if v == "" {
			return errors.New("must name a PostgreSQL database (postgres://user@host:5432/name)")
		}
		if !strings.Contains(v, "://") {
			if !strings.Contains(v, "=") {
				return errors.New("must be a postgres:// URL or a key=value connection string")
			}
			return nil
		}
		// A Unix socket is named by the host parameter, the URL's own host
		// left empty: postgres:///docflow?host=/var/run/postgresql.
		if u, err := url.Parse(v); err == nil && u.Host == "" && strings.HasPrefix(u.Query().Get("host"), "/") {
			if s := strings.ToLower(u.Scheme); s != "postgres" && s != "postgresql" {
				return fmt.Errorf("%q must be a URL starting with postgres:// or postgresql://", redactedURL(v))
			}
			return nil
		}
		return checkURL(v, []string{"postgres", "postgresql"})
	}
}

// HostPort accepts host:port (the host may be empty: every address).
func HostPort() SettingCheck {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must be host:port, for example 127.0.0.1:8000")
		}
		return checkHostPort(strings.TrimSpace(v))
	}
}

// OptionalHostPort accepts host:port, or empty (the feature is off).
func OptionalHostPort() SettingCheck {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		return checkHostPort(strings.TrimSpace(v))
	}
}

// HostPortList accepts a comma-separated list of host:port.
func HostPortList() SettingCheck {
	return func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if err := checkHostPort(p); err != nil {
				return err
			}
		}
		return nil
	}
}

func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Errorf("%q is not host:port", v)
	}
	if err := checkPort(port); err != nil {
		return fmt.Errorf("%q: %v", v, err)
	}
	return nil
}

func checkPort(p string) error {
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return nil
}

// AddressList accepts a comma-separated list of IP addresses and CIDR
// ranges.
func AddressList() SettingCheck {
	return func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if strings.Contains(p, "/") {
				if _, _, err := net.ParseCIDR(p); err != nil {
					return fmt.Errorf("%q is not a CIDR range like 10.0.0.0/8", p)
				}
			} else if net.ParseIP(p) == nil {
				return fmt.Errorf("%q is not an IP address", p)
			}
		}
		return nil
	}
}

// HostList accepts a comma-separated list of host names or addresses
// (no scheme, path or port).
func HostList() SettingCheck {
	return func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if strings.ContainsAny(p, "/:@ ") && net.ParseIP(p) == nil {
				return fmt.Errorf("%q is not a host name (no scheme, port or path)", p)
			}
		}
		return nil
	}
}

// MinLength accepts "" (not set) or at least n characters.
func MinLength(n int) SettingCheck {
	return func(v string) error {
		if v != "" && len(v) < n {
			return fmt.Errorf("must be at least %d characters (it has %d)", n, len(v))
		}
		return nil
	}
}

// RateLimit accepts a request rate such as 100/minute (see ParseRate).
func RateLimit() SettingCheck {
	return func(v string) error {
		_, err := ParseRate(v)
		return err
	}
}

// PoolSizes accepts "type=n,…" with positive n (see ParsePoolSizes).
func PoolSizes() SettingCheck {
	return func(v string) error {
		_, err := ParsePoolSizes(v)
		return err
	}
}

// ParsePoolSizes parses "ocr=2,convert_to_pdf=2" into actors per step
// type; "" is empty.
func ParsePoolSizes(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, v, ok := strings.Cut(p, "=")
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if !ok || err != nil || n <= 0 || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("%q is not a pool size: write step_type=n with n at least 1, for example ocr=2", p)
		}
		out[strings.TrimSpace(k)] = n
	}
	return out, nil
}

// LanguageCodes accepts Tesseract language codes joined with +
// (eng+deu), or auto.
func LanguageCodes() SettingCheck {
	// NOTE: compiled here, not in a package variable: a check a handle's
	// entry uses must not make the handle wait for another variable, which
	// would move its entry in the catalogue (see TestCatalogueOrder).
	languageCodes := regexp.MustCompile(`^[A-Za-z_]+(\+[A-Za-z_]+)*$`)
	return func(v string) error {
		v = strings.TrimSpace(v)
		if v == "" || v == "auto" || languageCodes.MatchString(v) {
			return nil
		}
		return errors.New("must be Tesseract language codes joined with +, for example eng+deu")
	}
}

// RegionName accepts a cloud region's name (eu-central-1, westeurope):
// lower-case letters, digits and hyphens; "" is not set.
func RegionName() SettingCheck {
	return func(v string) error {
		for _, r := range strings.TrimSpace(v) {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return errors.New("must be a region name such as eu-central-1 or westeurope (lower-case letters, digits, hyphens)")
			}
		}
		return nil
	}
}

// EmailAddress accepts one e-mail address (with or without a name).
func EmailAddress() SettingCheck {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		if _, err := mail.ParseAddress(v); err != nil {
			return errors.New("is not an e-mail address")
		}
		return nil
	}
}

// NotEmpty refuses "".
func NotEmpty() SettingCheck {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must not be empty")
		}
		return nil
	}
}

// ScopeList accepts a comma-separated list of OAuth scopes that holds
// openid (without it the provider answers no ID token).
func ScopeList() SettingCheck {
	return func(v string) error {
		found := false
		for _, sc := range strings.Split(v, ",") {
			sc = strings.TrimSpace(sc)
			if sc == "" {
				continue
			}
			for _, r := range sc {
				// RFC 6749 3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
				if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
					return fmt.Errorf("%q is not a scope (printable ASCII without spaces, quotes or backslashes)", sc)
				}
			}
			found = found || sc == "openid"
		}
		if !found {
			return errors.New("must include openid")
		}
		return nil
	}
}
