package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"docflow"
)

// Destination is somewhere send_to_destinations delivers a processed file.
// Deliver must be idempotent: a retried step delivers the same file again.
type Destination interface {
	// Name identifies the destination in the deliveries table ("local", or
	// an integration id).
	Name() string
	// Provider is the destination's kind, lower case: "local", or an
	// integration type (webdav, s3, dropbox…). A delivered file records
	// it; the files listing's storage_provider filter matches it.
	Provider() string
	// Deliver copies the file at path (named name) and returns where it went.
	Deliver(ctx context.Context, f *docflow.File, path, name string) (remotePath string, err error)
}

// Destinations returns the destinations of a file (its owner's configured
// ones, the local folder…).
type Destinations func(ctx context.Context, f *docflow.File) ([]Destination, error)

// DestinationQueue queues a file's deliveries to its owner's destination
// integrations, which their actors make (postgres.DestinationStore;
// actors/destinations).
type DestinationQueue interface {
	// EnqueueFileDeliveries queues f's delivery to every active
	// destination integration of owner for run runID (once per run) and
	// records local, the system-wide folder's delivery, when not nil.
	EnqueueFileDeliveries(ctx context.Context, f *docflow.File, owner, runID string, local *docflow.FileDestination) ([]docflow.FileDestination, error)
}

// SendToDestinations is the send_to_destinations step with the
// destinations dests only (no integrations): see SendToDestinationsQueued.
func SendToDestinations(dests Destinations) docflow.Step {
	return SendToDestinationsQueued(dests, nil, nil)
}

// SendToDestinationsQueued is the send_to_destinations step: the processed
// file (else the original) goes to every destination of dests (the
// system-wide folder), here and now, and its delivery to each active
// destination integration of its owner (owner(f); "" for none) is queued
// on q, for the integrations' actors to make. A failed delivery here fails
// the attempt (and is retried) after the others were tried; the queued
// ones are retried on their own, each by its actor. Once every one here
// succeeded, their providers join the file's StorageProviders (the queued
// ones' join when they are delivered).
func SendToDestinationsQueued(dests Destinations, q DestinationQueue, owner func(*docflow.File) string) docflow.Step {
	if dests == nil {
		panic("steps: SendToDestinations needs Destinations")
	}
	return docflow.StepFunc{Name: docflow.StepSendToDestinations, Fn: func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
		ds, err := dests(ctx, in.File)
		if err != nil {
			return nil, fmt.Errorf("destinations: %w", err)
		}
		ownerID := ""
		if q != nil && owner != nil {
			ownerID = owner(in.File)
		}
		if len(ds) == 0 && ownerID == "" {
			return &docflow.StepResult{Skipped: true, Message: "No destinations configured"}, nil
		}
		res := &docflow.StepResult{}
		var sent []string
		var local *docflow.FileDestination
		if len(ds) > 0 {
			if in.Blobs == nil {
				return nil, docflow.Errorf(docflow.EUNAVAILABLE, "no blob store to read the file from")
			}
			key := in.File.ProcessedBlob
			name := in.File.OriginalFilename
			if key == "" {
				key = in.File.OriginalBlob
			} else if ext := filepath.Ext(name); !strings.EqualFold(ext, ".pdf") {
				name = strings.TrimSuffix(name, ext) + ".pdf"
			}
			path, err := in.Blobs.Path(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("read file %d: %w", in.File.ID, err)
			}
			var errs []error
			for _, d := range ds {
				remote, err := d.Deliver(ctx, in.File, path, name)
				del := docflow.Delivery{Destination: d.Name(), Provider: d.Provider(), Status: "delivered", RemotePath: remote}
				if err != nil {
					del.Status, del.Message = "failed", err.Error()
					errs = append(errs, fmt.Errorf("%s: %w", d.Name(), err))
				} else {
					sent = append(sent, d.Name()+":"+remote)
					if d.Name() == docflow.SystemDestination {
						// Shown relative to LOCAL_DESTINATION_DIR: <owner>/<id>_<name>.
						now := time.Now()
						rel := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(remote)), filepath.Base(remote)))
						local = &docflow.FileDestination{Type: docflow.IntegrationLocal, Name: docflow.LocalDestinationDir.Key(),
							Status: docflow.DestinationDelivered, RemotePath: rel, DeliveredAt: &now}
					}
				}
				res.Deliveries = append(res.Deliveries, del)
			}
			if len(errs) > 0 {
				return nil, errors.Join(errs...)
			}
			if st, err := os.Stat(path); err == nil {
				res.Bytes = st.Size() * int64(len(ds))
			}
			in.File.StorageProviders = withProviders(in.File.StorageProviders, res.Deliveries)
		}
		var queued []docflow.FileDestination
		if q != nil && (ownerID != "" || local != nil) {
			if queued, err = q.EnqueueFileDeliveries(ctx, in.File, ownerID, in.RunID, local); err != nil {
				return nil, fmt.Errorf("queue deliveries: %w", err)
			}
		}
		var parts []string
		if len(sent) > 0 {
			parts = append(parts, "Delivered to "+strings.Join(sent, ", "))
		}
		if len(queued) > 0 {
			names := make([]string, 0, len(queued))
			for _, d := range queued {
				names = append(names, fmt.Sprintf("%s (%s)", d.Name, d.Type))
			}
			parts = append(parts, fmt.Sprintf("queued for %d destinations: %s", len(queued), strings.Join(names, ", ")))
		}
		if len(parts) == 0 {
			return &docflow.StepResult{Skipped: true, Message: "No destinations configured"}, nil
		}
		res.Message = strings.Join(parts, "; ")
		return res, nil
	}}
}

// LocalFolder delivers into a folder on this machine:
// <dir>/<owner or "shared">/<file id>_<name>. Dir is read at each delivery
// (LOCAL_DESTINATION_DIR may change at run time); "" = not configured.
type LocalFolder struct {
	Dir func() string
}

// Name implements Destination.
func (l LocalFolder) Name() string { return "local" }

// Provider implements Destination.
func (l LocalFolder) Provider() string { return "local" }

// Deliver implements Destination: copy to a temporary name, sync, rename.
func (l LocalFolder) Deliver(ctx context.Context, f *docflow.File, path, name string) (string, error) {
	dir := strings.TrimSpace(l.Dir())
	if dir == "" {
		return "", errors.New("LOCAL_DESTINATION_DIR is not set")
	}
	owner := "shared"
	if f.OwnerID != nil && *f.OwnerID != "" {
		owner = safeName(*f.OwnerID)
	}
	dir = filepath.Join(dir, owner)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, strconv.FormatInt(f.ID, 10)+"_"+safeName(name))
	src, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, ".incoming-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	if _, err := io.Copy(tmp, &ctxReader{ctx: ctx, r: src}); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", err
	}
	return dst, nil
}

// LocalDestinations is the Destinations of a deployment with only the local
// folder: it applies when dir() is set.
func LocalDestinations(dir func() string) Destinations {
	return func(ctx context.Context, f *docflow.File) ([]Destination, error) {
		if strings.TrimSpace(dir()) == "" {
			return nil, nil
		}
		return []Destination{LocalFolder{Dir: dir}}, nil
	}
}

// withProviders adds the providers of dels to have: sorted, each once,
// lower case.
func withProviders(have []string, dels []docflow.Delivery) []string {
	out := slices.Clone(have)
	for _, d := range dels {
		if p := strings.ToLower(strings.TrimSpace(d.Provider)); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// safeName keeps a path element from escaping its folder.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r < 32 {
			return '_'
		}
		return r
	}, s)
	s = strings.TrimLeft(s, ".")
	if s == "" {
		s = "file"
	}
	return s
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
