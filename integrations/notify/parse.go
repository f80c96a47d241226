// Package notify sends admin notifications through the channels of
// NOTIFICATION_URLS, written in Apprise's URL syntax so URLs copied from
// Apprise work as they are: mailto, json/jsons, ntfy/ntfys,
// gotify/gotifys, slack, discord and msteams.
//
// Each entry is parsed on its own: a bad entry is reported with its reason
// and the others are still used. Entries carry tokens and passwords, so an
// entry is only ever shown redacted (Redact). HTTP channels connect
// through the private-address guard (netguard) with WEBHOOK_ALLOWED_HOSTS
// as its exceptions: notification URLs are events going out, like
// webhooks. mailto goes through the application's docflow.Mailer (the
// SMTP settings).
package notify

import (
	"fmt"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Channel is one parsed NOTIFICATION_URLS entry.
type Channel struct {
	// Service is the entry redacted: the scheme and host, tokens and
	// passwords replaced by "***".
	Service string
	// Kind is the channel's family: mailto, json, ntfy, gotify, slack,
	// discord, msteams.
	Kind string
	// Endpoint is the URL a notification is POSTed to (HTTP channels).
	Endpoint string
	// Headers are sent with the request (authentication among them).
	Headers map[string]string
	// User and Password are HTTP basic credentials, when given.
	User, Password string
	// Name is the display name (slack, discord), Channel a slack
	// channel, Priority the ntfy/gotify priority.
	Name, SlackChannel string
	Priority           int
	Topics             []string // ntfy
	To                 []string // mailto recipients
}

// Default hosts of the cloud services; Notifier.Bases overrides them in
// tests.
const (
	slackBase   = "https://hooks.slack.com"
	discordBase = "https://discord.com"
	ntfyBase    = "https://ntfy.sh"
)

var (
	tokenPart = regexp.MustCompile(`^[A-Za-z0-9_.~-]+$`)
	teamsPart = regexp.MustCompile(`^[A-Za-z0-9_.@-]+$`)
)

// Parse reads one NOTIFICATION_URLS entry. Its error text never contains
// the entry's secrets.
func Parse(entry string) (*Channel, error) {
	u, err := url.Parse(strings.TrimSpace(entry))
	if err != nil {
		return nil, fmt.Errorf("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	c := &Channel{Service: Redact(entry), Headers: map[string]string{}}
	if u.Host == "" && scheme != "mailto" {
		return nil, fmt.Errorf("%s:// URL without a host", scheme)
	}
	switch scheme {
	case "json", "jsons":
		err = parseJSON(c, u, scheme)
	case "ntfy", "ntfys":
		err = parseNtfy(c, u, scheme)
	case "gotify", "gotifys":
		err = parseGotify(c, u, scheme)
	case "slack":
		err = parseSlack(c, u)
	case "discord":
		err = parseDiscord(c, u)
	case "msteams":
		err = parseTeams(c, u)
	case "mailto":
		err = parseMailto(c, u)
	case "":
		err = fmt.Errorf("no scheme (write it as an Apprise URL, such as ntfys://ntfy.sh/topic)")
	default:
		err = fmt.Errorf("unsupported scheme %q (supported: mailto, json, jsons, ntfy, ntfys, gotify, gotifys, slack, discord, msteams)", scheme)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// segments returns u's non-empty path segments, unescaped.
func segments(u *url.URL) []string {
	var out []string
	for _, p := range strings.Split(u.EscapedPath(), "/") {
		if p == "" {
			continue
		}
		if v, err := url.PathUnescape(p); err == nil {
			out = append(out, v)
		}
	}
	return out
}

// query reads u's parameters as Apprise does: a "+" starting a key stays
// a "+" (Apprise's header prefix) and ";" does not split pairs (Go's
// ParseQuery drops pairs with one).
func query(u *url.URL) url.Values {
	out := url.Values{}
	for _, pair := range strings.Split(u.RawQuery, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err1 := url.PathUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		out[key] = append(out[key], val)
	}
	return out
}

func httpScheme(secure bool) string {
	if secure {
		return "https"
	}
	return "http"
}

// parseJSON: json://[user:password@]host[:port]/path[?+Header=value].
// The body is Apprise's JSON payload {version, title, message, type}.
func parseJSON(c *Channel, u *url.URL, scheme string) error {
	c.Kind = "json"
	e := url.URL{Scheme: httpScheme(scheme == "jsons"), Host: u.Host, Path: u.Path}
	c.Endpoint = e.String()
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	for k, vs := range query(u) {
		// Apprise's "+Name=value" adds a request header.
		if name, ok := strings.CutPrefix(k, "+"); ok && name != "" && len(vs) > 0 {
			c.Headers[name] = vs[0]
		}
	}
	return nil
}

// parseNtfy: ntfy://topic (ntfy.sh), ntfy://[user[:password]@]host[:port]/topic[/topic...],
// ntfy://token@host/topic (a "tk_" access token); ?priority=1..5 or
// min/low/default/high/max.
func parseNtfy(c *Channel, u *url.URL, scheme string) error {
	c.Kind = "ntfy"
	topics := segments(u)
	base := httpScheme(scheme == "ntfys") + "://" + u.Host
	if len(topics) == 0 {
		// ntfy://{topic}: the topic on the public server.
		topics, base = []string{u.Hostname()}, ntfyBase
	}
	for _, t := range topics {
		if !tokenPart.MatchString(t) || len(t) > 64 {
			return fmt.Errorf("an ntfy topic is empty, longer than 64 characters or has characters other than letters, digits, - and _")
		}
	}
	c.Topics, c.Endpoint = topics, base
	if u.User != nil {
		pass, hasPass := u.User.Password()
		switch name := u.User.Username(); {
		case hasPass:
			c.User, c.Password = name, pass
		case strings.HasPrefix(name, "tk_") || query(u).Get("token") != "":
			c.Headers["Authorization"] = "Bearer " + name
		default:
			c.User = name
		}
	}
	if t := query(u).Get("token"); t != "" {
		c.Headers["Authorization"] = "Bearer " + t
	}
	p, err := priority(query(u).Get("priority"), map[string]int{"min": 1, "low": 2, "default": 3, "high": 4, "max": 5, "emergency": 5}, 1, 5)
	if err != nil {
		return fmt.Errorf("ntfy %w", err)
	}
	c.Priority = p
	return nil
}

// parseGotify: gotify://host[:port][/path]/token; ?priority=low, moderate,
// normal, high, emergency or 0..10. The token goes in the X-Gotify-Key
// header (never in the query, where proxies log it).
func parseGotify(c *Channel, u *url.URL, scheme string) error {
	c.Kind = "gotify"
	segs := segments(u)
	if len(segs) == 0 {
		return fmt.Errorf("gotify URL without an application token (gotify://host/token)")
	}
	token := segs[len(segs)-1]
	path := strings.Join(segs[:len(segs)-1], "/")
	if path != "" {
		path = "/" + path
	}
	c.Endpoint = httpScheme(scheme == "gotifys") + "://" + u.Host + path + "/message"
	c.Headers["X-Gotify-Key"] = token
	p, err := priority(query(u).Get("priority"), map[string]int{"low": 1, "moderate": 3, "normal": 5, "high": 8, "emergency": 10}, 0, 10)
	if err != nil {
		return fmt.Errorf("gotify %w", err)
	}
	if p == 0 && query(u).Get("priority") == "" {
		p = 5
	}
	c.Priority = p
	return nil
}

func priority(v string, names map[string]int, lo, hi int) (int, error) {
	if v == "" {
		return 0, nil
	}
	if n, ok := names[strings.ToLower(v)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("priority %q is not %d..%d nor a priority name", v, lo, hi)
	}
	return n, nil
}

// parseSlack: slack://[botname@]TokenA/TokenB/TokenC[/#channel], the three
// parts of an incoming webhook (hooks.slack.com/services/A/B/C). Bot
// tokens (xoxb-) are not supported: they need the Slack API.
func parseSlack(c *Channel, u *url.URL) error {
	c.Kind = "slack"
	parts := append([]string{u.Host}, segments(u)...)
	if u.Fragment != "" { // slack://A/B/C/#channel: the # starts a fragment
		parts = append(parts, "#"+u.Fragment)
	}
	if strings.HasPrefix(parts[0], "xox") {
		return fmt.Errorf("slack bot tokens are not supported; use an incoming webhook (slack://TokenA/TokenB/TokenC)")
	}
	var tokens []string
	for _, p := range parts {
		switch {
		case strings.HasPrefix(p, "#") || strings.HasPrefix(p, "@"):
			c.SlackChannel = p
		default:
			tokens = append(tokens, p)
		}
	}
	if len(tokens) != 3 {
		return fmt.Errorf("slack URL needs the three webhook tokens (slack://TokenA/TokenB/TokenC)")
	}
	for _, t := range tokens {
		if !tokenPart.MatchString(t) {
			return fmt.Errorf("slack token has characters a webhook token never has")
		}
	}
	if u.User != nil {
		c.Name = u.User.Username()
	}
	c.Endpoint = slackBase + "/services/" + strings.Join(tokens, "/")
	return nil
}

// parseDiscord: discord://[botname@]WebhookID/WebhookToken
// (discord.com/api/webhooks/ID/Token).
func parseDiscord(c *Channel, u *url.URL) error {
	c.Kind = "discord"
	segs := segments(u)
	if len(segs) != 1 {
		return fmt.Errorf("discord URL needs the webhook id and token (discord://WebhookID/WebhookToken)")
	}
	if _, err := strconv.ParseUint(u.Host, 10, 64); err != nil || !tokenPart.MatchString(segs[0]) {
		return fmt.Errorf("discord webhook id must be a number and the token a webhook token")
	}
	if u.User != nil {
		c.Name = u.User.Username()
	}
	c.Endpoint = discordBase + "/api/webhooks/" + u.Host + "/" + segs[0]
	return nil
}

// parseTeams: msteams://team/TokenA/TokenB/TokenC[/TokenD] (the
// {team}.webhook.office.com/webhookb2/A/IncomingWebhook/B/C[/D] webhook)
// or the legacy msteams://TokenA/TokenB/TokenC
// (outlook.office.com/webhook/A/IncomingWebhook/B/C).
func parseTeams(c *Channel, u *url.URL) error {
	c.Kind = "msteams"
	first := u.Host
	if u.User != nil { // the legacy form's TokenA is "uuid@uuid"
		first = u.User.Username() + "@" + u.Host
	}
	parts := append([]string{first}, segments(u)...)
	for _, p := range parts {
		if !teamsPart.MatchString(p) {
			return fmt.Errorf("msteams token has characters a webhook token never has")
		}
	}
	switch len(parts) {
	case 3:
		c.Endpoint = "https://outlook.office.com/webhook/" + parts[0] + "/IncomingWebhook/" + parts[1] + "/" + parts[2]
	case 4, 5:
		c.Endpoint = "https://" + parts[0] + ".webhook.office.com/webhookb2/" + parts[1] + "/IncomingWebhook/" + strings.Join(parts[2:], "/")
	default:
		return fmt.Errorf("msteams URL needs a team and the webhook tokens (msteams://team/TokenA/TokenB/TokenC/TokenD)")
	}
	return nil
}

// parseMailto: mailto://user@domain (to user@domain, Apprise's form),
// mailto://domain?to=a@x.org (more recipients with more to= or separated
// by spaces or semicolons). Mail goes through the SMTP settings: a
// password or SMTP parameters in the URL are ignored.
func parseMailto(c *Channel, u *url.URL) error {
	c.Kind = "mailto"
	var to []string
	if u.User != nil && u.Host != "" {
		to = append(to, u.User.Username()+"@"+u.Hostname())
	} else if u.Opaque != "" { // mailto:a@x.org, the RFC 6068 form
		to = append(to, strings.Split(u.Opaque, ",")...)
	}
	for _, v := range query(u)["to"] {
		to = append(to, strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == ';' })...)
	}
	for _, a := range to {
		addr, err := mail.ParseAddress(a)
		if err != nil {
			return fmt.Errorf("mailto recipient %q is not an e-mail address", a)
		}
		c.To = append(c.To, addr.Address)
	}
	if len(c.To) == 0 {
		return fmt.Errorf("mailto URL without a recipient (mailto://user@example.com)")
	}
	return nil
}

// Redact returns entry with everything that may be secret replaced by
// "***": user names and passwords (but mailto recipients and slack or
// discord display names), the path (webhook tokens, gotify tokens and
// ntfy topics are all secrets), the query, and the host where it is a
// token. The scheme and a server's host stay, so an admin can tell the
// channels apart.
func Redact(entry string) string {
	u, err := url.Parse(strings.TrimSpace(entry))
	if err != nil || u.Scheme == "" {
		return "(unparsable entry)"
	}
	scheme := strings.ToLower(u.Scheme)
	host := "***" // slack, discord, msteams and unknown schemes: a token
	switch scheme {
	case "json", "jsons", "gotify", "gotifys", "mailto":
		host = u.Host
	case "ntfy", "ntfys":
		if u.Path != "" && u.Path != "/" { // else ntfy://{topic}
			host = u.Host
		}
	}
	out := scheme + "://"
	if u.User != nil {
		// A user name is kept where it is a recipient or a display name;
		// elsewhere it may be a token.
		switch name := u.User.Username(); scheme {
		case "mailto", "slack", "discord":
			out += name + "@"
		default:
			out += "***@"
		}
	}
	out += host
	if u.Path != "" && u.Path != "/" {
		out += "/***"
	}
	if u.RawQuery != "" {
		out += "?***"
	}
	return out
}
