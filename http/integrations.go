package http

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// IntegrationStore is what the integrations API asks of storage
// (storage/postgres.IntegrationStore). Every method is scoped to owner.
// exempt lifts the quota (administrators, single-user mode).
type IntegrationStore interface {
	ListIntegrations(ctx context.Context, owner string, f docflow.IntegrationFilter) ([]*docflow.Integration, error)
	GetIntegration(ctx context.Context, owner string, id int64) (*docflow.Integration, error)
	IntegrationWithCredentials(ctx context.Context, owner string, id int64) (*docflow.Integration, error)
	CreateIntegration(ctx context.Context, in *docflow.Integration, exempt bool) error
	UpdateIntegration(ctx context.Context, owner string, id int64, exempt bool, fn func(*docflow.Integration) error) (*docflow.Integration, error)
	DeleteIntegration(ctx context.Context, owner string, id int64) error
	IntegrationUsage(ctx context.Context, owner string) (docflow.IntegrationUsage, error)
}

// IntegrationsDeps are the integrations API's dependencies.
type IntegrationsDeps struct {
	Store IntegrationStore
	// Testers answer POST /api/integrations/test per type; a type
	// without one is "not supported yet".
	Testers docflow.IntegrationTesters
}

// integrationNameMax bounds an integration's name.
const integrationNameMax = 200

// integrationTestTimeout bounds one test (within the route's 30 s).
const integrationTestTimeout = 25 * time.Second

// integrationBody is a create, update or test request. Read-only fields a
// client echoes from a GET (id, owner_id, has_credentials, status…) are
// ignored.
type integrationBody struct {
	Direction       *string         `json:"direction"`
	IntegrationType *string         `json:"integration_type"`
	Name            *string         `json:"name"`
	Config          json.RawMessage `json:"config"`
	Credentials     json.RawMessage `json:"credentials"`
	IsActive        *bool           `json:"is_active"`
	// IntegrationID (test only) tests a stored integration, with config
	// and credentials of the body applied as an update would, unsaved.
	IntegrationID *int64 `json:"integration_id"`
}

// quotaCount is one direction of GET /api/integrations/quota/.
// MaxAllowed is null when unlimited.
type quotaCount struct {
	CurrentCount int  `json:"current_count"`
	MaxAllowed   *int `json:"max_allowed"`
	CanAdd       bool `json:"can_add"`
}

// MountIntegrations mounts /api/integrations/… (AuthUser, scoped to
// the current user: administrators too see and change only their own).
// In single-user mode the records belong to the administrator's id, as
// API tokens do, so they stay the administrator's when sign-in is turned
// on.
func (s *Server) MountIntegrations(d IntegrationsDeps) {
	if d.Store == nil {
		panic("http: MountIntegrations needs a Store")
	}
	h := &integrationHandlers{s: s, d: d}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/integrations/", b, h.list, docListIntegrations)
	s.Handle("GET", "/api/integrations/quota/", b, h.quota, docIntegrationQuota)
	s.Handle("GET", "/api/integrations/{id}", b, h.get, docGetIntegration)
	s.Handle("POST", "/api/integrations/", b, h.create, docCreateIntegration)
	s.Handle("PUT", "/api/integrations/{id}", b, h.update, docUpdateIntegration)
	s.Handle("DELETE", "/api/integrations/{id}", b, h.delete, docDeleteIntegration)
	s.Handle("POST", "/api/integrations/test", b, h.test, docTestIntegration)
}

type integrationHandlers struct {
	s *Server
	d IntegrationsDeps
}

// owner is whose integrations the request reads and changes.
func (h *integrationHandlers) owner(c *fasthttp.RequestCtx) string {
	return h.s.tokenOwner(CurrentUser(c))
}

func (h *integrationHandlers) list(c *fasthttp.RequestCtx) error {
	var f docflow.IntegrationFilter
	args := c.QueryArgs()
	if v := strings.ToUpper(strings.TrimSpace(string(args.Peek("direction")))); v != "" {
		if v != docflow.DirectionSource && v != docflow.DirectionDestination {
			return invalid("direction", "direction must be SOURCE or DESTINATION")
		}
		f.Direction = v
	}
	f.IntegrationType = strings.ToUpper(strings.TrimSpace(string(args.Peek("integration_type"))))
	list, err := h.d.Store.ListIntegrations(RequestContext(c), h.owner(c), f)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, list)
	return nil
}

func (h *integrationHandlers) quota(c *fasthttp.RequestCtx) error {
	u, err := h.d.Store.IntegrationUsage(RequestContext(c), h.owner(c))
	if err != nil {
		return err
	}
	q := docflow.IntegrationQuotaFor(u.Tier)
	exempt := h.s.integrationExempt(CurrentUser(c))
	count := func(direction string) quotaCount {
		used, limit := u.Used(direction), q.Max(direction)
		out := quotaCount{CurrentCount: used, CanAdd: exempt || q.Allows(direction, used)}
		if !exempt && limit != docflow.Unlimited {
			out.MaxAllowed = &limit
		}
		return out
	}
	writeJSON(c, fasthttp.StatusOK, integrationQuota{TierID: u.Tier, TierName: docflow.TierName(u.Tier),
		Destinations: count(docflow.DirectionDestination), Sources: count(docflow.DirectionSource)})
	return nil
}

func (h *integrationHandlers) get(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	in, err := h.d.Store.GetIntegration(RequestContext(c), h.owner(c), id)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, in)
	return nil
}

func (h *integrationHandlers) create(c *fasthttp.RequestCtx) error {
	var req integrationBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return invalid("name", "name is required")
	}
	name, err := integrationName(*req.Name)
	if err != nil {
		return err
	}
	in, err := checkIntegrationBody(&req, nil)
	if err != nil {
		return err
	}
	in.OwnerID, in.Name, in.IsActive = h.owner(c), name, req.IsActive == nil || *req.IsActive
	if err := h.d.Store.CreateIntegration(RequestContext(c), in, h.s.integrationExempt(CurrentUser(c))); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditIntegrationCreate, Target: integrationTarget(in.ID),
		Detail: integrationCreateDetail(in)})
	writeJSON(c, fasthttp.StatusCreated, in)
	return nil
}

func (h *integrationHandlers) update(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var req integrationBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var name string
	if req.Name != nil {
		if name, err = integrationName(*req.Name); err != nil {
			return err
		}
	}
	var before docflow.Integration
	var credsChanged bool
	out, err := h.d.Store.UpdateIntegration(RequestContext(c), h.owner(c), id, h.s.integrationExempt(CurrentUser(c)), func(cur *docflow.Integration) error {
		before = *cur
		next, err := checkIntegrationBody(&req, cur)
		if err != nil {
			return err
		}
		cur.Config, cur.Credentials = next.Config, next.Credentials
		credsChanged = next.Credentials != nil
		if req.Name != nil {
			cur.Name = name
		}
		if req.IsActive != nil {
			cur.IsActive = *req.IsActive
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The store's commit is the fence: from here on no source started
	// before this change takes mail in (decisions.md, IMAP sources).
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditIntegrationUpdate, Target: integrationTarget(id),
		Detail: integrationUpdateDetail(&before, out, credsChanged)})
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *integrationHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := h.d.Store.DeleteIntegration(RequestContext(c), h.owner(c), id); err != nil {
		return err
	}
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditIntegrationDelete, Target: integrationTarget(id)})
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *integrationHandlers) test(c *fasthttp.RequestCtx) error {
	var req integrationBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx := RequestContext(c)
	var in *docflow.Integration
	if req.IntegrationID != nil {
		cur, err := h.d.Store.IntegrationWithCredentials(ctx, h.owner(c), *req.IntegrationID)
		if err != nil {
			return err
		}
		stored := cur.Credentials
		// A moved endpoint without credentials is refused here, before
		// any connection: stored credentials go only where they were
		// given for.
		if in, err = checkIntegrationBody(&req, cur); err != nil {
			return err
		}
		if in.Credentials == nil {
			in.Credentials = stored
		}
		in.ID, in.Name = cur.ID, cur.Name
	} else {
		var err error
		if in, err = checkIntegrationBody(&req, nil); err != nil {
			return err
		}
	}
	in.OwnerID = h.owner(c)
	tctx, cancel := context.WithTimeout(ctx, integrationTestTimeout)
	defer cancel()
	ok, msg := h.d.Testers.Test(tctx, in)
	h.s.audit(c, docflow.AuditEntry{Action: docflow.AuditIntegrationTest, Target: integrationTarget(in.ID),
		Detail: integrationTestDetail(in, ok)})
	writeJSON(c, fasthttp.StatusOK, integrationTest{Success: ok, Message: msg})
	return nil
}

// integrationExempt reports whether u has no integration quota: an
// administrator, or anyone in single-user mode (AUTH_ENABLED false).
func (s *Server) integrationExempt(u *docflow.User) bool {
	return u == nil || u.IsAdmin || u.Anonymous || !docflow.AuthEnabled.Get(s.cfg.Settings)
}

func integrationName(v string) (string, error) {
	name := strings.TrimSpace(v)
	if name == "" {
		return "", invalid("name", "name must not be empty")
	}
	if utf8.RuneCountInString(name) > integrationNameMax {
		return "", invalid("name", "name must be at most %d characters", integrationNameMax)
	}
	return name, nil
}

// checkIntegrationBody checks a request's type, direction, config and
// credentials against the catalogue. With cur nil (create, test of an
// unsaved integration) the body is the whole integration: absent
// credentials count as none. With cur (update, test of a stored one) the
// type and direction cannot change, config keys of the body are merged
// into the stored config (null removes a key, so its default applies
// again) and credentials, when given, replace the stored ones whole; a
// change of an endpoint key (host, port, URL, security, CA…) of an
// integration with stored credentials needs credentials in the body
// (docflow.CheckEndpointChange, 422 on credentials).
// The result carries Direction, IntegrationType, Config and Credentials
// (nil when the body gave none for an update).
func checkIntegrationBody(req *integrationBody, cur *docflow.Integration) (*docflow.Integration, error) {
	cfg, cfgGiven, err := jsonObject("config", req.Config)
	if err != nil {
		return nil, err
	}
	creds, credsGiven, err := jsonObject("credentials", req.Credentials)
	if err != nil {
		return nil, err
	}
	in := docflow.IntegrationInput{Config: cfg, Credentials: creds}
	if cur == nil {
		if req.IntegrationType != nil {
			in.IntegrationType = *req.IntegrationType
		}
		if req.Direction != nil {
			in.Direction = *req.Direction
		}
		if !credsGiven {
			in.Credentials = map[string]any{}
		}
	} else {
		if req.IntegrationType != nil && !strings.EqualFold(strings.TrimSpace(*req.IntegrationType), cur.IntegrationType) {
			return nil, invalid("integration_type", "integration_type cannot change (it is %s); create a new integration instead", cur.IntegrationType)
		}
		if req.Direction != nil && !strings.EqualFold(strings.TrimSpace(*req.Direction), cur.Direction) {
			return nil, invalid("direction", "direction cannot change (it is %s)", cur.Direction)
		}
		in.IntegrationType, in.Direction = cur.IntegrationType, cur.Direction
		merged := maps.Clone(cur.Config)
		if merged == nil {
			merged = map[string]any{}
		}
		if cfgGiven {
			for k, v := range cfg {
				if v == nil {
					delete(merged, k)
				} else {
					merged[k] = v
				}
			}
		}
		in.Config = merged
		if !credsGiven {
			in.Credentials = nil
		}
	}
	checked, err := docflow.CheckIntegration(in)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		if err := docflow.CheckEndpointChange(checked.Type, cur.Config, checked.Config, cur.HasCredentials, credsGiven); err != nil {
			return nil, err
		}
	}
	return &docflow.Integration{Direction: checked.Type.Direction, IntegrationType: checked.Type.Type,
		Config: checked.Config, Credentials: checked.Credentials}, nil
}

// jsonObject decodes an optional object field: absent or null is not
// given; anything but an object is 422 naming the field.
func jsonObject(field string, raw json.RawMessage) (map[string]any, bool, error) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return nil, false, nil
	}
	var m map[string]any
	if err := jsonUnmarshal(raw, &m); err != nil {
		return nil, false, invalid(field, "%s must be an object", field)
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, true, nil
}
