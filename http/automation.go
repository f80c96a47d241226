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
	Hooks docflow.AutomationHookStore
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
// and deletes it. Reading one hook, changing it (PUT: pause and resume
// with is_active) and its delivery log are its owner's, and any
// administrator's; anyone else gets 404.
func (s *Server) MountAutomation(d AutomationDeps) {
	if d.Hooks == nil {
		panic("http: MountAutomation needs Hooks")
	}
	if d.Resolver == nil {
		d.Resolver = net.DefaultResolver
	}
	h := &hookHandlers{s: s, d: d}
	r := Route{Auth: AuthToken}
	s.Handle("GET", "/api/automation/events", r, h.events, docHookEvents)
	s.Handle("POST", "/api/automation/hooks/subscribe", r, h.subscribe, docSubscribeHook)
	s.Handle("GET", "/api/automation/hooks", r, h.list, docListHooks)
	s.Handle("GET", "/api/automation/hooks/{hook_id}", r, h.get, docGetHook)
	s.Handle("PUT", "/api/automation/hooks/{hook_id}", r, h.update, docUpdateHook)
	s.Handle("DELETE", "/api/automation/hooks/{hook_id}", r, h.delete, docDeleteHook)
	s.Handle("GET", "/api/automation/hooks/{hook_id}/deliveries", r, h.deliveries, docHookDeliveries)
	s.Handle("GET", "/api/automation/triggers/sample/{event}", r, h.sample, docHookSample)
}

func (h *hookHandlers) events(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, docflow.EventNames)
	return nil
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
	// Active is accepted for is_active (PUT).
	Active *bool `json:"active"`
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
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditHookSubscribe, Target: "hook:" + strconv.FormatInt(hook.ID, 10),
		Detail: hook.TargetURL + " sees_all=" + strconv.FormatBool(hook.SeesAll)})
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

// viewer is who the request's token speaks for, as the hooks store scopes.
func hookViewer(c *fasthttp.RequestCtx) docflow.HookViewer {
	u := CurrentUser(c)
	return docflow.HookViewer{UserID: u.ID, Admin: u.IsAdmin}
}

func (h *hookHandlers) get(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "hook_id")
	if err != nil {
		return err
	}
	hook, err := h.d.Hooks.FindHook(RequestContext(c), hookViewer(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, hook)
	return nil
}

// update changes any subset of a hook's fields; is_active false pauses
// it: no event is recorded for it while paused (docs/decisions.md).
func (h *hookHandlers) update(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "hook_id")
	if err != nil {
		return err
	}
	var req hookReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx := RequestContext(c)
	v := hookViewer(c)
	// The hook is looked up first, so another user's hook is a 404
	// whatever the body holds.
	if _, err := h.d.Hooks.FindHook(ctx, v, id); err != nil {
		return err
	}
	var p docflow.AutomationHookPatch
	if req.TargetURL != nil {
		u, err := checkTargetURL(ctx, h.s.cfg.Settings, h.d.Resolver, "target_url", *req.TargetURL)
		if err != nil {
			return err
		}
		p.TargetURL = &u
	}
	if req.Events != nil {
		events, err := checkEvents(*req.Events)
		if err != nil {
			return err
		}
		p.Events = &events
	}
	if req.HookType != nil {
		t := strings.TrimSpace(*req.HookType)
		if utf8.RuneCountInString(t) > hookMaxType {
			return invalid("hook_type", "hook_type must be at most %d characters", hookMaxType)
		}
		p.HookType = &t
	}
	if req.Secret != nil {
		if len(*req.Secret) > webhookMaxSecret {
			return invalid("secret", "secret must be at most %d bytes", webhookMaxSecret)
		}
		p.Secret = req.Secret
	}
	if req.Description != nil {
		d := strings.TrimSpace(*req.Description)
		if utf8.RuneCountInString(d) > webhookMaxDescription {
			return invalid("description", "description must be at most %d characters", webhookMaxDescription)
		}
		p.Description = &d
	}
	p.IsActive = req.IsActive
	if req.Active != nil {
		if req.IsActive != nil && *req.IsActive != *req.Active {
			return invalid("active", "active and is_active disagree")
		}
		p.IsActive = req.Active
	}
	hook, err := h.d.Hooks.UpdateHook(ctx, v, id, p)
	if err != nil {
		return err
	}
	detail := ""
	if p.IsActive != nil {
		detail = map[bool]string{true: "resumed", false: "paused"}[*p.IsActive]
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditHookUpdate, Target: "hook:" + strconv.FormatInt(id, 10), Detail: detail})
	writeJSON(c, fasthttp.StatusOK, hook)
	return nil
}

// deliveries answers a hook's delivery log in the webhooks' format.
func (h *hookHandlers) deliveries(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "hook_id")
	if err != nil {
		return err
	}
	page, perPage, err := deliveryPage(c)
	if err != nil {
		return err
	}
	list, total, err := h.d.Hooks.ListHookDeliveries(RequestContext(c), hookViewer(c), id, page, perPage)
	if err != nil {
		return err
	}
	writeDeliveryPage(c, list, total, page, perPage)
	return nil
}
