package http

import (
	"archive/zip"
	"bufio"
	"context"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// The files' content: preview and download of one file, the bulk ZIP.

// bulkDownloadTimeout bounds the streaming of one ZIP after the handler
// returned (the request context ends with the handler).
const bulkDownloadTimeout = time.Hour

// versionBlob picks the blob of a version; for the processed version the
// name becomes a PDF's.
func versionBlob(f *docflow.File, version string) (key, name, mimeType string) {
	if version == "processed" {
		base := strings.TrimSuffix(f.OriginalFilename, path.Ext(f.OriginalFilename))
		return f.ProcessedBlob, base + ".pdf", "application/pdf"
	}
	return f.OriginalBlob, f.OriginalFilename, f.MimeType
}

// content serves preview (inline, version required) and download
// (attachment, version defaults to processed and falls back to the
// original when no processed file exists).
func (h *filesHandlers) content(inline bool) Handler {
	return func(c *fasthttp.RequestCtx) error {
		version := string(c.QueryArgs().Peek("version"))
		explicit := version != ""
		switch {
		case inline && !explicit:
			return invalid("version", "version is required (original or processed)")
		case !explicit:
			version = "processed"
		case version != "original" && version != "processed":
			return docflow.Errorf(docflow.EBADREQUEST, "Invalid version: must be original or processed")
		}
		f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
		if err != nil {
			return err
		}
		ctx := RequestContext(c)
		key, name, mimeType := versionBlob(f, version)
		if key == "" && !explicit {
			key, name, mimeType = versionBlob(f, "original")
		}
		if key == "" {
			return docflow.Errorf(docflow.ENOTFOUND, "No %s version of this file", version)
		}
		rc, size, err := h.d.Blobs.Open(ctx, key)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND && !explicit && version == "processed" {
			key, name, mimeType = versionBlob(f, "original")
			rc, size, err = h.d.Blobs.Open(ctx, key)
		}
		if err != nil {
			if docflow.ErrorCode(err) == docflow.ENOTFOUND {
				return docflow.Errorf(docflow.ENOTFOUND, "File not found on disk")
			}
			return err
		}
		disp := "attachment"
		if inline {
			disp = "inline"
			// NOTE: an SVG or HTML-ish upload shown inline must not run
			// script in the service's origin. The document page frames
			// previews (same origin only). A PDF is not sandboxed: the
			// browser's PDF viewer refuses sandboxed documents, and runs
			// outside the page's origin anyway.
			csp := "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'self'"
			if mimeType == "application/pdf" {
				csp = "default-src 'none'; object-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'self'"
			}
			c.Response.Header.Set("Content-Security-Policy", csp)
			c.Response.Header.Set("X-Frame-Options", "SAMEORIGIN")
		}
		c.Response.Header.Set("Content-Disposition", ContentDisposition(disp, name))
		c.Response.Header.Set("X-Content-Type-Options", "nosniff")
		c.Response.Header.SetContentType(mimeType)
		c.SetStatusCode(fasthttp.StatusOK)
		// fasthttp closes rc once the body is sent.
		c.SetBodyStream(h.s.writeProgress(c).reader(rc), int(size))
		return nil
	}
}

// ContentDisposition builds the header with an ASCII fallback name and the
// RFC 6266 / RFC 5987 filename* for anything else.
func ContentDisposition(disp, name string) string {
	var ascii strings.Builder
	plain := true
	for _, r := range name {
		switch {
		case r < 0x20 || r == 0x7f || r == '"' || r == '\\':
			ascii.WriteByte('_')
			plain = false
		case r > 0x7e:
			ascii.WriteByte('_')
			plain = false
		default:
			ascii.WriteRune(r)
		}
	}
	out := disp + `; filename="` + ascii.String() + `"`
	if !plain {
		out += "; filename*=UTF-8''" + strings.ReplaceAll(url.PathEscape(name), "+", "%2B")
	}
	return out
}

type zipEntry struct {
	key, name string
	modified  time.Time
}

func (h *filesHandlers) bulkDownload(c *fasthttp.RequestCtx) error {
	// NOTE: an empty list finds no files, which is a 404, as for
	// bulk-delete.
	ids, err := parseBulkIDs(c, true)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "No files found")
	}
	files, err := h.visibleFiles(c, ids, docflow.AccessView)
	if err != nil {
		return err
	}
	ctx := RequestContext(c)
	var entries []zipEntry
	used := map[string]int{}
	for _, f := range files {
		var key, name string
		for _, v := range []string{"processed", "original"} {
			k, n, _ := versionBlob(f, v)
			if k == "" {
				continue
			}
			if ok, err := h.d.Blobs.Exists(ctx, k); err != nil {
				return err
			} else if ok {
				key, name = k, n
				break
			}
		}
		if key == "" {
			continue // missing on disk: left out of the ZIP, without an error
		}
		entries = append(entries, zipEntry{key: key, name: uniqueName(used, name), modified: f.CreatedAt})
	}
	if len(entries) == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "No files found on disk")
	}
	name := "docflow_bulk_" + h.s.cfg.Now().UTC().Format("20060102_150405") + ".zip"
	c.Response.Header.SetContentType("application/zip")
	c.Response.Header.Set("Content-Disposition", ContentDisposition("attachment", name))
	c.SetStatusCode(fasthttp.StatusOK)
	blobs, log, progress := h.d.Blobs, h.s.log, h.s.writeProgress(c)
	// NOTE: the writer runs after the handler returned, when the request
	// context is already cancelled: it gets its own deadline.
	c.SetBodyStreamWriter(func(w *bufio.Writer) {
		defer progress.finish()
		ctx, cancel := context.WithTimeout(context.Background(), bulkDownloadTimeout)
		defer cancel()
		zw := zip.NewWriter(progress.writer(w))
		for _, e := range entries {
			rc, _, err := blobs.Open(ctx, e.key)
			if err != nil {
				continue // vanished since the check: skipped like any missing file
			}
			// Stored, not deflated: documents are mostly compressed already,
			// and storing keeps the stream as fast as the disk.
			fw, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store, Modified: e.modified})
			if err == nil {
				_, err = io.Copy(fw, rc)
			}
			rc.Close()
			if err != nil {
				log.Debug().Err(err).Msg("bulk download: client went away")
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
		}
		if err := zw.Close(); err != nil {
			log.Debug().Err(err).Msg("bulk download: finish zip")
		}
	})
	return nil
}

// uniqueName keeps ZIP entry names distinct: "a.pdf", "a (2).pdf", …, and
// clean (docflow.CleanFilename), whenever the record was stored.
func uniqueName(used map[string]int, name string) string {
	name = docflow.CleanFilename(strings.ReplaceAll(name, "/", "_"))
	used[name]++
	if n := used[name]; n > 1 {
		ext := path.Ext(name)
		candidate := strings.TrimSuffix(name, ext) + " (" + strconv.Itoa(n) + ")" + ext
		used[candidate]++
		return candidate
	}
	return name
}
