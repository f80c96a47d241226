package http

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// SettingsAdmin is what the settings API needs of the settings store:
// docflow.SettingsStore, and several values stored at once.
type SettingsAdmin interface {
	docflow.SettingsStore
	// SetMany stores the values the service can use in one transaction and
	// returns them in catalogue order, with why each other key was refused
	// (ENOTFOUND, EINVALID); err is a failure to store at all.
	SetMany(ctx context.Context, values map[string]string) ([]*docflow.Setting, map[string]error, error)
}

// Suggester lists the values a setting may take, for its suggestions.
type Suggester func(ctx context.Context) ([]string, error)

// SettingsDeps is what the settings API and page need.
type SettingsDeps struct {
	Store SettingsAdmin
	// Suggest adds or replaces suggestion providers by catalogue key;
	// TESSERACT_LANGUAGE needs one (the installed languages). AWS_REGION,
	// AZURE_REGION, EASYOCR_LANGUAGES and EMBEDDING_MODEL have theirs.
	Suggest map[string]Suggester
}

// maskedValue stands for a sensitive value that is set: the value itself
// never leaves the server.
const maskedValue = "********"

// MountSettings registers the Settings section of the API and the
// /settings page (administrators only).
func (s *Server) MountSettings(d SettingsDeps) {
	if d.Store == nil {
		panic("http: MountSettings needs Store")
	}
	suggest := map[string]Suggester{
		docflow.AWSRegion.Key():        fixedSuggestions(docflow.AWSRegions),
		docflow.AzureRegion.Key():      fixedSuggestions(docflow.AzureRegions),
		docflow.EasyOCRLanguages.Key(): fixedSuggestions(docflow.EasyOCRLanguageCodes()),
		docflow.EmbeddingModel.Key():   fixedSuggestions(docflow.EmbeddingModels),
	}
	for k, f := range d.Suggest {
		suggest[k] = f
	}
	h := &settingsHandlers{s: s, d: d, suggest: suggest}
	a := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/settings/", a, h.list, docListSettings)
	s.Handle("GET", "/api/settings/credentials", a, h.credentials, docSettingCredentials)
	s.Handle("POST", "/api/settings/bulk-update", a, h.bulk, docBulkSettings)
	s.Handle("GET", "/api/settings/{key}", a, h.get, docGetSetting)
	s.Handle("POST", "/api/settings/{key}", a, h.set, docSetSetting)
	s.Handle("DELETE", "/api/settings/{key}", a, h.delete, docDeleteSetting)
	s.Handle("GET", "/api/settings/{key}/suggestions", a, h.suggestions, docSettingSuggestions)
	s.Handle("GET", "/settings", Route{Auth: AuthNone}, h.page, docSettingsPage)
}

func fixedSuggestions(values []string) Suggester {
	return func(context.Context) ([]string, error) { return values, nil }
}

type settingsHandlers struct {
	s       *Server
	d       SettingsDeps
	suggest map[string]Suggester
}

// settingView is a setting as the API shows it: a sensitive value is
// masked, and so is its default.
type settingView struct {
	Key             string     `json:"key"`
	Value           string     `json:"value"`
	Source          string     `json:"source"`
	Category        string     `json:"category"`
	Description     string     `json:"description"`
	Type            string     `json:"type"`
	Sensitive       bool       `json:"sensitive"`
	Required        bool       `json:"required"`
	RestartRequired bool       `json:"restart_required"`
	EnvOnly         bool       `json:"env_only"`
	Options         []string   `json:"options"`
	Default         string     `json:"default"`
	Suggestions     bool       `json:"suggestions"`
	UpdatedAt       *time.Time `json:"updated_at,omitempty"`
}

func (h *settingsHandlers) view(st *docflow.Setting) settingView {
	v := settingView{Key: st.Key, Value: st.Value, Source: st.Source, Category: st.Category, Description: st.Description,
		Type: st.Type, Sensitive: st.Sensitive, Required: st.Required, RestartRequired: st.RestartRequired,
		EnvOnly: st.EnvOnly, Options: st.Options, Default: st.Default, UpdatedAt: st.UpdatedAt}
	if v.Options == nil {
		v.Options = []string{}
	}
	if st.Sensitive {
		v.Value, v.Default = "", ""
		if st.Value != "" {
			v.Value = maskedValue
		}
	}
	_, v.Suggestions = h.suggest[st.Key]
	return v
}

// settingKey is the {key} of the path as the catalogue spells it: the
// API takes the original service's lower-case keys (aws_region) too.
func settingKey(c *fasthttp.RequestCtx) string {
	k, _ := c.UserValue("key").(string)
	return strings.ToUpper(strings.TrimSpace(k))
}

func (h *settingsHandlers) list(c *fasthttp.RequestCtx) error {
	all, err := h.d.Store.List(RequestContext(c))
	if err != nil {
		return err
	}
	out := make([]settingView, 0, len(all))
	for _, st := range all {
		out = append(out, h.view(st))
	}
	writeJSON(c, fasthttp.StatusOK, settingsList{Settings: out, Categories: docflow.SettingCategories})
	return nil
}

func (h *settingsHandlers) get(c *fasthttp.RequestCtx) error {
	st, err := h.d.Store.Lookup(RequestContext(c), settingKey(c))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, h.view(st))
	return nil
}

// settingValue reads a value sent as a JSON string, number or boolean.
func settingValue(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b), true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

type settingReq struct {
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
}

// set stores one value: 422 naming the problem when the service could not
// use it, 404 for a key outside the catalogue.
func (h *settingsHandlers) set(c *fasthttp.RequestCtx) error {
	key := settingKey(c)
	if _, err := h.d.Store.Lookup(RequestContext(c), key); err != nil {
		return err
	}
	var req settingReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Key != nil && !strings.EqualFold(strings.TrimSpace(*req.Key), key) {
		return invalid("key", "key %q in the body is not the key of the path (%s)", *req.Key, key)
	}
	if len(req.Value) == 0 || string(req.Value) == "null" {
		return invalid("value", "value is required (a string); to return to the environment or the default, DELETE /api/settings/%s", key)
	}
	value, ok := settingValue(req.Value)
	if !ok {
		return invalid("value", "value must be a string (or a number or boolean)")
	}
	st, err := h.d.Store.Set(RequestContext(c), key, value)
	if err != nil {
		return err
	}
	h.auditSet(c, st)
	writeJSON(c, fasthttp.StatusOK, h.view(st))
	return nil
}

func (h *settingsHandlers) auditSet(c *fasthttp.RequestCtx, st *docflow.Setting) {
	detail := "value " + strconv.Quote(st.Value)
	if st.Sensitive {
		detail = "a hidden value"
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditSettingUpdate, Target: "setting:" + st.Key, Detail: detail})
}

// delete removes the database value, so the environment's or the default
// applies; the answer is the setting as it now is.
func (h *settingsHandlers) delete(c *fasthttp.RequestCtx) error {
	key := settingKey(c)
	ctx := RequestContext(c)
	before, err := h.d.Store.Lookup(ctx, key)
	if err != nil {
		return err
	}
	if err := h.d.Store.Delete(ctx, key); err != nil {
		return err
	}
	st, err := h.d.Store.Lookup(ctx, key)
	if err != nil {
		return err
	}
	if before.Source == "db" {
		h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditSettingDelete, Target: "setting:" + key, Detail: "now from " + st.Source})
	}
	writeJSON(c, fasthttp.StatusOK, h.view(st))
	return nil
}

type bulkError struct {
	Key    string `json:"key"`
	Detail string `json:"detail"`
}

// bulk stores several values: each key's outcome is reported. An empty
// value (or a sensitive setting's mask sent back) is ignored, never a
// clearing. The answer is 200 when something was stored or nothing was
// refused, else 422 with the same body.
func (h *settingsHandlers) bulk(c *fasthttp.RequestCtx) error {
	var items []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	body := strings.TrimSpace(string(c.PostBody()))
	if strings.HasPrefix(body, "{") {
		// {"settings": [...]} as well as the bare array.
		var wrapped struct {
			Settings *json.RawMessage `json:"settings"`
		}
		if err := decodeJSON(c, &wrapped); err != nil {
			return err
		}
		if wrapped.Settings == nil {
			return invalid("settings", "the body must be an array of {key, value}")
		}
		if err := jsonUnmarshal(*wrapped.Settings, &items); err != nil {
			return invalid("settings", "the body must be an array of {key, value}")
		}
	} else if err := decodeJSON(c, &items); err != nil {
		return invalid("body", "the body must be an array of {key, value}")
	}
	ctx := RequestContext(c)
	values := map[string]string{}
	var order []string
	var refused []bulkError
	ignored := []string{}
	for _, it := range items {
		key := strings.ToUpper(strings.TrimSpace(it.Key))
		st, err := h.d.Store.Lookup(ctx, key)
		switch {
		case key == "":
			refused = append(refused, bulkError{Key: it.Key, Detail: "key is required"})
			continue
		case err != nil:
			refused = append(refused, bulkError{Key: it.Key, Detail: docflow.ErrorMessage(err)})
			continue
		}
		v, ok := settingValue(it.Value)
		switch {
		case len(it.Value) == 0 || string(it.Value) == "null":
			ignored = append(ignored, key)
		case !ok:
			refused = append(refused, bulkError{Key: key, Detail: "value must be a string (or a number or boolean)"})
		case strings.TrimSpace(v) == "" || (st.Sensitive && v == maskedValue):
			ignored = append(ignored, key)
		default:
			if _, dup := values[key]; dup {
				refused = append(refused, bulkError{Key: key, Detail: key + " is given more than once"})
				continue
			}
			values[key] = v
			order = append(order, key)
		}
	}
	var set []*docflow.Setting
	if len(values) > 0 {
		var failed map[string]error
		var err error
		if set, failed, err = h.d.Store.SetMany(ctx, values); err != nil {
			return err
		}
		for _, key := range order {
			if e := failed[key]; e != nil {
				refused = append(refused, bulkError{Key: key, Detail: docflow.ErrorMessage(e)})
			}
		}
	}
	updated := []string{}
	views := []settingView{}
	restart := false
	for _, st := range set {
		h.auditSet(c, st)
		updated = append(updated, st.Key)
		views = append(views, h.view(st))
		restart = restart || st.RestartRequired
	}
	if refused == nil {
		refused = []bulkError{}
	}
	status := fasthttp.StatusOK
	detail := strconv.Itoa(len(updated)) + " updated"
	if len(refused) > 0 {
		detail += ", " + strconv.Itoa(len(refused)) + " refused"
		if len(updated) == 0 {
			status = fasthttp.StatusUnprocessableEntity
		}
	}
	if len(ignored) > 0 {
		detail += ", " + strconv.Itoa(len(ignored)) + " ignored (empty values do not clear a setting: delete it instead)"
	}
	writeJSON(c, status, settingsBulkResult{Detail: detail, Updated: updated, Errors: refused, Ignored: ignored,
		RestartRequired: restart, Settings: views})
	return nil
}

type credentialView struct {
	Key         string  `json:"key"`
	Category    string  `json:"category"`
	Description string  `json:"description"`
	Configured  bool    `json:"configured"`
	Source      *string `json:"source"` // db or env; null when not configured
}

// credentials is the overview of the sensitive settings: which are set,
// and where; never their values.
func (h *settingsHandlers) credentials(c *fasthttp.RequestCtx) error {
	all, err := h.d.Store.List(RequestContext(c))
	if err != nil {
		return err
	}
	out := []credentialView{}
	configured := 0
	for _, st := range all {
		if !st.Sensitive {
			continue
		}
		v := credentialView{Key: st.Key, Category: st.Category, Description: st.Description}
		if st.Value != "" && st.Source != "default" {
			v.Configured = true
			src := st.Source
			v.Source = &src
			configured++
		}
		out = append(out, v)
	}
	writeJSON(c, fasthttp.StatusOK, credentialsOverview{Credentials: out, Total: len(out),
		ConfiguredCount: configured, UnconfiguredCount: len(out) - configured})
	return nil
}

// suggestions: up to limit (default 10, at most 50) values of the
// setting containing q; 404 for a setting without a provider.
func (h *settingsHandlers) suggestions(c *fasthttp.RequestCtx) error {
	key := settingKey(c)
	if _, err := h.d.Store.Lookup(RequestContext(c), key); err != nil {
		return err
	}
	f, ok := h.suggest[key]
	if !ok {
		return docflow.Errorf(docflow.ENOTFOUND, "No suggestions for %s: suggestions exist for %s", key, strings.Join(h.suggestable(), ", "))
	}
	limit := 10
	if raw := strings.TrimSpace(string(c.QueryArgs().Peek("limit"))); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 50 {
			return invalid("limit", "limit must be an integer from 1 to 50")
		}
		limit = n
	}
	all, err := f(RequestContext(c))
	if err != nil {
		return err
	}
	q := string(c.QueryArgs().Peek("q"))
	writeJSON(c, fasthttp.StatusOK, settingSuggestions{Key: key, Suggestions: docflow.FilterSuggestions(all, q, limit)})
	return nil
}

func (h *settingsHandlers) suggestable() []string {
	out := make([]string, 0, len(h.suggest))
	for k := range h.suggest {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
