package paperless

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"docflow"
)

// objectID returns the id of the correspondent or tag (kind
// "correspondents" or "tags") called name, creating it when Paperless
// has none (with matching "none", so Paperless does not start assigning
// it to other documents). 0 without error when the token's user may not
// see or create it: the document is delivered without it.
func (c *Client) objectID(ctx context.Context, kind, name string) (int64, error) {
	name = truncate(name, 128)
	key := kind + "\x00" + strings.ToLower(name)
	if id, ok := c.ids[key]; ok {
		return id, nil
	}
	find := func() (int64, error) {
		var page struct {
			Results []struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
			} `json:"results"`
		}
		err := c.call(ctx, http.MethodGet, kind+"/", url.Values{"name__iexact": {name}, "page_size": {"1"}}, nil, &page)
		if err != nil || len(page.Results) == 0 {
			return 0, err
		}
		return page.Results[0].ID, nil
	}
	id, err := find()
	if refused(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if id > 0 {
		c.ids[key] = id
		return id, nil
	}
	var made struct {
		ID int64 `json:"id"`
	}
	err = c.call(ctx, http.MethodPost, kind+"/", nil, map[string]any{"name": name, "matching_algorithm": 0}, &made)
	switch {
	case err == nil:
		id = made.ID
	case refused(err):
		return 0, nil
	case docflow.DestinationFailureOf(err) == docflow.DestInvalid:
		// Made meanwhile by someone else (names are unique): look again.
		if id, err = find(); err != nil {
			return 0, err
		}
	default:
		return 0, err
	}
	if id > 0 {
		c.ids[key] = id
	}
	return id, nil
}

// refused reports a 403: the token's user lacks the permission.
func refused(err error) bool {
	return err != nil && docflow.DestinationFailureOf(err) == docflow.DestForbidden
}

// task is one entry of /api/tasks/.
type task struct {
	Status          string          `json:"status"`
	Result          string          `json:"result"`
	RelatedDocument json.RawMessage `json:"related_document"`
}

func (t task) documentID() int64 {
	s := strings.Trim(string(t.RelatedDocument), `"`)
	id, _ := strconv.ParseInt(s, 10, 64)
	return id
}

var (
	duplicateRE = regexp.MustCompile(`(?i)duplicate of .*\(#(\d+)\)`)
	fullRE      = regexp.MustCompile(`(?i)no space left on device|errno 28|disk quota exceeded`)
)

// follow watches the consumption task until it ends, until it has been
// running for a poll interval (Paperless's checks, the duplicate check
// among them, come first: what is left is parsing, which may take
// minutes), or until Options.TaskWait passes. A task still queued or
// running then, or a task list Paperless does not answer, leaves the
// upload in Paperless's hands: delivered, "task <id>".
func (c *Client) follow(ctx context.Context, id string) (string, error) {
	queued := "task " + id
	if c.o.TaskWait < 0 || id == "" {
		return queued, nil
	}
	deadline := time.Now().Add(c.o.TaskWait)
	running := 0
	for {
		tasks, err := c.tasks(ctx, id)
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			return queued, nil
		}
		if len(tasks) > 0 {
			t := tasks[0]
			switch strings.ToUpper(t.Status) {
			case "SUCCESS":
				if doc := t.documentID(); doc > 0 {
					return c.documentURL(doc), nil
				}
				return queued, nil
			case "FAILURE", "REVOKED":
				return c.failed(id, t)
			case "STARTED":
				if running++; running > 1 {
					return queued, nil
				}
			}
		}
		if time.Now().Add(c.o.PollInterval).After(deadline) {
			return queued, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(c.o.PollInterval):
		}
	}
}

// tasks reads /api/tasks/?task_id=id: a list, or a page of results in
// versions that paginate it.
func (c *Client) tasks(ctx context.Context, id string) ([]task, error) {
	var raw json.RawMessage
	if err := c.call(ctx, http.MethodGet, "tasks/", url.Values{"task_id": {id}}, nil, &raw); err != nil {
		return nil, err
	}
	var list []task
	if json.Unmarshal(raw, &list) == nil {
		return list, nil
	}
	var page struct {
		Results []task `json:"results"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, err
	}
	return page.Results, nil
}

// failed classes a consumption that failed. A duplicate is the document
// Paperless already holds: delivered. What Paperless wrote is not shown;
// the reason is in fixed words.
func (c *Client) failed(id string, t task) (string, error) {
	if m := duplicateRE.FindStringSubmatch(t.Result); m != nil {
		doc, _ := strconv.ParseInt(m[1], 10, 64)
		return c.documentURL(doc), nil
	}
	cause := errors.New("paperless task " + id + ": " + truncate(t.Result, 500))
	switch r := strings.ToLower(t.Result); {
	case strings.Contains(r, "duplicate"):
		return "task " + id, nil
	case fullRE.MatchString(r):
		return "", docflow.DestFail(docflow.DestFull, "Paperless ran out of disk space consuming the document", cause)
	case strings.Contains(r, "unsupported mime type") || strings.Contains(r, "unsupported_type"):
		return "", docflow.DestFail(docflow.DestInvalid, "Paperless does not take this file type", cause)
	}
	return "", docflow.DestFail(docflow.DestInvalid, "Paperless could not consume the document (task "+id+")", cause)
}

// Probe checks that the token is accepted and that its user may add
// documents: Paperless's /api/ui_settings/ lists the user's permissions.
// Nothing is written: a probe document would be consumed, indexed and
// numbered, and deleting it leaves it in Paperless's trash. A user
// without the UI settings permission is checked by reading the document
// list only.
func (c *Client) Probe(ctx context.Context) error {
	var ui struct {
		User struct {
			IsSuperuser bool `json:"is_superuser"`
		} `json:"user"`
		Permissions []string `json:"permissions"`
	}
	err := c.call(ctx, http.MethodGet, "ui_settings/", nil, nil, &ui)
	if refused(err) {
		return c.call(ctx, http.MethodGet, "documents/", url.Values{"page_size": {"1"}}, nil, nil)
	}
	if err != nil {
		return err
	}
	if ui.User.IsSuperuser {
		return nil
	}
	for _, p := range ui.Permissions {
		if p == "add_document" {
			return nil
		}
	}
	return docflow.DestFail(docflow.DestForbidden, "the Paperless user of this token may not add documents (add_document)", nil)
}
