package http

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// savedSearchMaxName bounds a saved search's name.
const savedSearchMaxName = 200

// mountSavedSearches mounts /api/saved-searches…: each user's own saved
// searches.
func (s *Server) mountSavedSearches(store docflow.SavedSearchStore) {
	h := &savedSearchHandlers{store: store}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/saved-searches", b, h.list, docListSavedSearches)
	s.Handle("POST", "/api/saved-searches", b, h.create, docCreateSavedSearch)
	s.Handle("PUT", "/api/saved-searches/{id}", b, h.update, docUpdateSavedSearch)
	s.Handle("DELETE", "/api/saved-searches/{id}", b, h.delete, docDeleteSavedSearch)
}

type savedSearchHandlers struct {
	store docflow.SavedSearchStore
}

// savedSearchBody is a create or update request.
type savedSearchBody struct {
	Name    *string         `json:"name"`
	Filters json.RawMessage `json:"filters"`
}

func (h *savedSearchHandlers) list(c *fasthttp.RequestCtx) error {
	list, err := h.store.FindSavedSearches(RequestContext(c), CurrentUser(c).ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, list)
	return nil
}

func (h *savedSearchHandlers) create(c *fasthttp.RequestCtx) error {
	var req savedSearchBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return invalid("name", "name is required")
	}
	name, err := savedSearchName(*req.Name)
	if err != nil {
		return err
	}
	if savedSearchAbsent(req.Filters) {
		return invalid("filters", "filters is required")
	}
	filters, err := savedSearchFilters(req.Filters)
	if err != nil {
		return err
	}
	ss := &docflow.SavedSearch{OwnerID: CurrentUser(c).ID, Name: name, Filters: filters}
	if err := h.store.CreateSavedSearch(RequestContext(c), ss); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, ss)
	return nil
}

func (h *savedSearchHandlers) update(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	var req savedSearchBody
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var name string
	if req.Name != nil {
		if name, err = savedSearchName(*req.Name); err != nil {
			return err
		}
	}
	var filters map[string]any
	if !savedSearchAbsent(req.Filters) {
		if filters, err = savedSearchFilters(req.Filters); err != nil {
			return err
		}
	}
	ss, err := h.store.UpdateSavedSearch(RequestContext(c), CurrentUser(c).ID, id, func(ss *docflow.SavedSearch) error {
		if req.Name != nil {
			ss.Name = name
		}
		if filters != nil {
			ss.Filters = filters
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, ss)
	return nil
}

func (h *savedSearchHandlers) delete(c *fasthttp.RequestCtx) error {
	id, err := pathID(c, "id")
	if err != nil {
		return err
	}
	if err := h.store.DeleteSavedSearch(RequestContext(c), CurrentUser(c).ID, id); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func savedSearchName(v string) (string, error) {
	name := strings.TrimSpace(v)
	if name == "" {
		return "", invalid("name", "name must not be empty")
	}
	if utf8.RuneCountInString(name) > savedSearchMaxName {
		return "", invalid("name", "name must be at most %d characters", savedSearchMaxName)
	}
	return name, nil
}

func savedSearchAbsent(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	return t == "" || t == "null"
}

// savedSearchFilters keeps the allowed keys of a filters object. Unknown
// keys and null values are dropped; what remains must not be empty. A
// value is a string, number or boolean, or a list of them (tags).
func savedSearchFilters(raw json.RawMessage) (map[string]any, error) {
	var in map[string]any
	if err := jsonUnmarshal(raw, &in); err != nil || in == nil {
		return nil, invalid("filters", "filters must be an object")
	}
	out := map[string]any{}
	for k, v := range in {
		if v == nil || !searchContains(docflow.SavedSearchFilterKeys, k) {
			continue
		}
		if !savedSearchValue(v, true) {
			return nil, invalid("filters."+k, "filters.%s must be a string, number, boolean or a list of them", k)
		}
		if s, ok := v.(string); ok && utf8.RuneCountInString(s) > searchMaxQuery {
			return nil, invalid("filters."+k, "filters.%s must be at most %d characters", k, searchMaxQuery)
		}
		out[k] = v
	}
	if len(out) == 0 {
		keys := append([]string(nil), docflow.SavedSearchFilterKeys...)
		sort.Strings(keys)
		return nil, invalid("filters", "filters must contain at least one of: %s", strings.Join(keys, ", "))
	}
	return out, nil
}

func savedSearchValue(v any, allowList bool) bool {
	switch t := v.(type) {
	case string, json.Number, bool:
		return true
	case []any:
		if !allowList || len(t) > 100 {
			return false
		}
		for _, e := range t {
			if !savedSearchValue(e, false) {
				return false
			}
		}
		return true
	}
	return false
}
