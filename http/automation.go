package http

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// AutomationDeps is what the automation hooks API needs.
type AutomationDeps struct {
	Hooks docflow.AutomationHookService
	// Resolver resolves a hook's host to check its addresses (default
	// net.DefaultResolver).
	Resolver *net.Resolver
}

// Bounds of an automation hook's fields.
const (
	hookMaxType = 100
)

// MountAutomation registers the automation hooks API (REST hooks for
// automation platforms). Every route needs a bearer API token, even in
// single-user mode; a hook belongs to the token's user, who alone lists
// and deletes it.
func (s *Server) MountAutomation(d AutomationDeps) {
	if d.Hooks == nil {
		panic("http: MountAutomation needs Hooks")
	}
	if d.Resolver == nil {
		d.Resolver = net.DefaultResolver
	}
	h := &hookHandlers{s: s, d: d}
	r := Route{Auth: AuthToken}
	s.Handle("GET", "/api/automation/events", r, func(c *fasthttp.RequestCtx) error {
		writeJSON(c, fasthttp.StatusOK, docflow.EventNames)
		return nil
	})
	s.Handle("POST", "/api/automation/hooks/subscribe", r, h.subscribe)
	s.Handle("GET", "/api/automation/hooks", r, h.list)
	s.Handle("DELETE", "/api/automation/hooks/{hook_id}", r, h.delete)
	s.Handle("GET", "/api/automation/triggers/sample/{event}", r, h.sample)
}

type hookHandlers struct {
	s *Server
	d AutomationDeps
}

type hookReq struct {
	TargetURL   *string   `json:"target_url"`
	Events      *[]string `json:"events"`
	HookType    *string   `json:"hook_type"`
	Secret      *string   `json:"secret"`
	Description *string   `json:"description"`
	IsActive    *bool     `json:"is_active"`
}

func (h *hookHandlers) subscribe(c *fasthttp.RequestCtx) error {
	var req hookReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.TargetURL == nil {
		return invalid("target_url", "target_url is required")
	}
	u, err := checkTargetURL(RequestContext(c), h.s.cfg.Settings, h.d.Resolver, "target_url", *req.TargetURL)
	if err != nil {
		return err
	}
	if req.Events == nil {
		return invalid("events", "events is required")
	}
	events, err := checkEvents(*req.Events)
	if err != nil {
		return err
	}
	user := CurrentUser(c)
	hook := &docflow.AutomationHook{OwnerID: user.ID, TargetURL: u, Events: events, IsActive: true, SeesAll: user.IsAdmin}
	if req.HookType != nil {
		hook.HookType = strings.TrimSpace(*req.HookType)
		if utf8.RuneCountInString(hook.HookType) > hookMaxType {
			return invalid("hook_type", "hook_type must be at most %d characters", hookMaxType)
		}
	}
	if req.Secret != nil {
		if len(*req.Secret) > webhookMaxSecret {
			return invalid("secret", "secret must be at most %d bytes", webhookMaxSecret)
		}
		hook.Secret = *req.Secret
	}
	if req.Description != nil {
		hook.Description = strings.TrimSpace(*req.Description)
		if utf8.RuneCountInString(hook.Description) > webhookMaxDescription {
			return invalid("description", "description must be at most %d characters", webhookMaxDescription)
		}
	}
	if req.IsActive != nil {
		hook.IsActive = *req.IsActive
	}
	if err := h.d.Hooks.CreateHook(RequestContext(c), hook); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditHookSubscribe, Target: "hook:" + strconv.FormatInt(hook.ID, 10), Detail: hook.TargetURL})
	writeJSON(c, fasthttp.StatusCreated, hook)
	return nil
}

func (h *hookHandlers) list(c *fasthttp.RequestCtx) error {
	hooks, err := h.d.Hooks.FindHooks(RequestContext(c), CurrentUser(c).ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, hooks)
	return nil
}

func (h *hookHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "hook_id")
	if err != nil {
		return err
	}
	if err := h.d.Hooks.DeleteHook(RequestContext(c), CurrentUser(c).ID, id); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditHookUnsubscribe, Target: "hook:" + strconv.FormatInt(id, 10)})
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// sample answers an array with one example payload of the event, in the
// flat format hooks receive (automation platforms show it when a trigger
// is set up).
func (h *hookHandlers) sample(c *fasthttp.RequestCtx) error {
	name, _ := c.UserValue("event").(string)
	if !slices.Contains(docflow.EventNames, name) {
		return docflow.Errorf(docflow.ENOTFOUND, "Unknown event %q", name)
	}
	ev := docflow.SampleEvent(name, CurrentUser(c).ID, h.s.cfg.Now())
	writeJSON(c, fasthttp.StatusOK, []map[string]any{docflow.HookPayload(ev)})
	return nil
}
