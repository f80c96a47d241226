package http

import (
	"context"
	"errors"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
	"docflow/internal/netguard"
)

// WebhooksDeps is what the webhooks API needs.
type WebhooksDeps struct {
	Webhooks docflow.WebhookStore
	// Resolver resolves a webhook's host to check its addresses (default
	// net.DefaultResolver).
	Resolver *net.Resolver
}

// Bounds of a webhook's fields.
const (
	webhookMaxURL         = 2048
	webhookMaxSecret      = 1024
	webhookMaxDescription = 1000
)

// MountWebhooks registers the Webhooks section of the API (admin only)
// and the delivery log.
func (s *Server) MountWebhooks(d WebhooksDeps) {
	if d.Webhooks == nil {
		panic("http: MountWebhooks needs Webhooks")
	}
	if d.Resolver == nil {
		d.Resolver = net.DefaultResolver
	}
	h := &webhookHandlers{s: s, d: d}
	b := Route{Auth: AuthAdmin}
	s.Handle("GET", "/api/webhooks/events/", b, h.events, docWebhookEvents)
	s.Handle("GET", "/api/webhooks/", b, h.list, docListWebhooks)
	s.Handle("POST", "/api/webhooks/", b, h.create, docCreateWebhook)
	s.Handle("GET", "/api/webhooks/{webhook_id}", b, h.get, docGetWebhook)
	s.Handle("PUT", "/api/webhooks/{webhook_id}", b, h.update, docUpdateWebhook)
	s.Handle("DELETE", "/api/webhooks/{webhook_id}", b, h.delete, docDeleteWebhook)
	s.Handle("GET", "/api/webhooks/{webhook_id}/deliveries", b, h.deliveries, docWebhookDeliveries)
	s.Handle("POST", "/api/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver", b, h.redeliver, docRedeliver)
}

func (h *webhookHandlers) events(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, docflow.EventNames)
	return nil
}

type webhookHandlers struct {
	s *Server
	d WebhooksDeps
}

type webhookReq struct {
	URL         *string   `json:"url"`
	Secret      *string   `json:"secret"`
	Events      *[]string `json:"events"`
	IsActive    *bool     `json:"is_active"`
	Description *string   `json:"description"`
}

func (h *webhookHandlers) list(c *fasthttp.RequestCtx) error {
	ws, err := h.d.Webhooks.FindWebhooks(RequestContext(c))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, ws)
	return nil
}

func (h *webhookHandlers) get(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "webhook_id")
	if err != nil {
		return err
	}
	w, err := h.d.Webhooks.FindWebhook(RequestContext(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, w)
	return nil
}

// check validates the fields req sets; on create url and events are
// required.
func (h *webhookHandlers) check(c *fasthttp.RequestCtx, req *webhookReq, create bool) error {
	if create && req.URL == nil {
		return invalid("url", "url is required")
	}
	if req.URL != nil {
		u, err := h.checkURL(RequestContext(c), *req.URL)
		if err != nil {
			return err
		}
		*req.URL = u
	}
	if create && req.Events == nil {
		return invalid("events", "events is required")
	}
	if req.Events != nil {
		ev, err := checkEvents(*req.Events)
		if err != nil {
			return err
		}
		*req.Events = ev
	}
	if req.Secret != nil && len(*req.Secret) > webhookMaxSecret {
		return invalid("secret", "secret must be at most %d bytes", webhookMaxSecret)
	}
	if req.Description != nil && utf8.RuneCountInString(*req.Description) > webhookMaxDescription {
		return invalid("description", "description must be at most %d characters", webhookMaxDescription)
	}
	return nil
}

// checkEvents accepts names of docflow.EventNames, each once, in the
// catalogue's order.
func checkEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, invalid("events", "events must name at least one event")
	}
	for _, e := range in {
		if !docflow.IsDeliverable(e) {
			return nil, invalid("events", "unknown event %q (known: %s)", e, strings.Join(docflow.EventNames, ", "))
		}
	}
	out := []string{}
	for _, e := range docflow.EventNames {
		if slices.Contains(in, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// checkURL accepts absolute http(s) URLs with a host and no credentials
// whose host is not a private or internal address (literal or resolved),
// unless WEBHOOK_ALLOWED_HOSTS admits the host on the URL's port. The
// delivery checks every connection again when it is made, so a DNS answer
// that changes later gains nothing.
func (h *webhookHandlers) checkURL(ctx context.Context, raw string) (string, error) {
	return checkTargetURL(ctx, h.s.cfg.Settings, h.d.Resolver, "url", raw)
}

// checkTargetURL is checkURL for any receiver's URL (webhooks, automation
// hooks), by netguard.CheckURL with the name resolved now; field names it
// in errors (EINVALID).
func checkTargetURL(ctx context.Context, settings docflow.SettingsStore, resolver *net.Resolver, field, raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", invalid(field, "%s is required", field)
	}
	if len(raw) > webhookMaxURL {
		return "", invalid(field, "%s must be at most %d characters", field, webhookMaxURL)
	}
	u, err := netguard.CheckURL(ctx, raw, netguard.URLRules{Resolve: true, Resolver: resolver,
		Allowed: docflow.WebhookAllowedHosts.Get(settings)})
	switch {
	case err == nil:
		return u.String(), nil
	case errors.Is(err, netguard.ErrUserInfo):
		return "", invalid(field, "%s must not carry credentials (use the secret to sign deliveries)", field)
	case errors.Is(err, netguard.ErrPort):
		return "", invalid(field, "%s has an invalid port", field)
	case errors.Is(err, netguard.ErrPrivate):
		return "", invalid(field, "access to private or internal addresses is not allowed")
	}
	return "", invalid(field, "%s must be an absolute http or https URL", field)
}

func (h *webhookHandlers) create(c *fasthttp.RequestCtx) error {
	var req webhookReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.check(c, &req, true); err != nil {
		return err
	}
	w := &docflow.Webhook{URL: *req.URL, Events: *req.Events, IsActive: true}
	if req.Secret != nil {
		w.Secret = *req.Secret
	}
	if req.IsActive != nil {
		w.IsActive = *req.IsActive
	}
	if req.Description != nil {
		w.Description = strings.TrimSpace(*req.Description)
	}
	if err := h.d.Webhooks.CreateWebhook(RequestContext(c), w); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditWebhookCreate, Target: "webhook:" + strconv.FormatInt(w.ID, 10), Detail: w.URL})
	writeJSON(c, fasthttp.StatusCreated, w)
	return nil
}

func (h *webhookHandlers) update(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "webhook_id")
	if err != nil {
		return err
	}
	var req webhookReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := h.check(c, &req, false); err != nil {
		return err
	}
	if req.Description != nil {
		*req.Description = strings.TrimSpace(*req.Description)
	}
	w, err := h.d.Webhooks.UpdateWebhook(RequestContext(c), id, docflow.WebhookPatch{URL: req.URL, Secret: req.Secret,
		Events: req.Events, IsActive: req.IsActive, Description: req.Description})
	if err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditWebhookUpdate, Target: "webhook:" + strconv.FormatInt(id, 10)})
	writeJSON(c, fasthttp.StatusOK, w)
	return nil
}

func (h *webhookHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "webhook_id")
	if err != nil {
		return err
	}
	if err := h.d.Webhooks.DeleteWebhook(RequestContext(c), id); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditWebhookDelete, Target: "webhook:" + strconv.FormatInt(id, 10)})
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *webhookHandlers) deliveries(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "webhook_id")
	if err != nil {
		return err
	}
	page, perPage, err := deliveryPage(c)
	if err != nil {
		return err
	}
	list, total, err := h.d.Webhooks.ListDeliveries(RequestContext(c), id, page, perPage)
	if err != nil {
		return err
	}
	writeDeliveryPage(c, list, total, page, perPage)
	return nil
}

// deliveryPage reads a delivery log's page (from 1) and per_page (1 to
// 200, default 50).
func deliveryPage(c *fasthttp.RequestCtx) (page, perPage int, err error) {
	args := c.QueryArgs()
	page, perPage = 1, 50
	for _, p := range []struct {
		name string
		hi   int
		dst  *int
	}{{"page", math.MaxInt32, &page}, {"per_page", 200, &perPage}} {
		if !args.Has(p.name) {
			continue
		}
		v, err := strconv.Atoi(string(args.Peek(p.name)))
		if err != nil || v < 1 || v > p.hi {
			return 0, 0, invalid(p.name, "%s must be an integer from 1 to %d", p.name, p.hi)
		}
		*p.dst = v
	}
	return page, perPage, nil
}

// writeDeliveryPage answers {deliveries, total, page, per_page, pages}.
func writeDeliveryPage(c *fasthttp.RequestCtx, list []docflow.DeliveryLogEntry, total, page, perPage int) {
	writeJSON(c, fasthttp.StatusOK, deliveryLog{Deliveries: list, Total: total, Page: page,
		PerPage: perPage, Pages: (total + perPage - 1) / perPage})
}

func (h *webhookHandlers) redeliver(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "webhook_id")
	if err != nil {
		return err
	}
	did, err := pathID(c, "delivery_id")
	if err != nil {
		return err
	}
	if err := h.d.Webhooks.Redeliver(RequestContext(c), id, did); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditWebhookRedeliver, Target: "webhook:" + strconv.FormatInt(id, 10),
		Detail: "delivery " + strconv.FormatInt(did, 10)})
	writeJSON(c, fasthttp.StatusAccepted, redeliveryQueued{Status: "queued", DeliveryID: did})
	return nil
}
