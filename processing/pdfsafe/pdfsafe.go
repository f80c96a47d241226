// Package pdfsafe removes active content from PDFs: what a viewer runs or
// opens by itself or on a click, rather than shows. The processed version
// of a document is what users download, preview and send on, so it must
// not carry an attacker's script from the upload.
//
// Removed: the document's OpenAction when it is an action (an initial view
// is kept), additional actions (/AA) of the document, pages, annotations
// and form fields, the document-level JavaScript name tree, XFA forms
// (which carry scripts), and every action that runs code or reaches
// outside the document: JavaScript, Launch, SubmitForm, ImportData,
// GoToR, GoToE, Rendition and RichMediaExecute, wherever it is used (link
// annotations, bookmarks, form fields, /Next chains). Links to web
// addresses (URI actions) and in-document links stay.
//
// Kept: embedded files (attachments). E-invoices (ZUGFeRD, Factur-X) carry
// their machine-readable XML as one, and no viewer opens an attachment by
// itself once the actions above are gone.
package pdfsafe

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"

	"docflow"
	"docflow/internal/proc"
	"docflow/processing/pdfconf"
)

// dangerous are the action types removed (PDF 32000-1, 12.6.4).
var dangerous = map[string]bool{
	"JavaScript": true, "Launch": true, "SubmitForm": true, "ImportData": true,
	"GoToR": true, "GoToE": true, "Rendition": true, "RichMediaExecute": true,
}

// Removed counts what was taken out, by kind. Empty: nothing active.
type Removed map[string]int

func (r Removed) add(kind string) { r[kind]++ }

// String lists the kinds, e.g. "OpenAction, JavaScript action ×2".
func (r Removed) String() string {
	parts := make([]string, 0, len(r))
	for k, n := range r {
		if n > 1 {
			k = fmt.Sprintf("%s ×%d", k, n)
		}
		parts = append(parts, k)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// Clean removes active content from a document read by pdfcpu, in place,
// and says what it removed. Objects only the removed entries referred to
// are left unreferenced, and pdfcpu does not write those.
func Clean(ctx *model.Context) (removed Removed) {
	removed = Removed{}
	x := ctx.XRefTable
	// Dangerous actions stored as objects of their own, then the links
	// that only serve to run one, by object number.
	c := cleaner{bad: map[int]string{}, removed: removed}
	for nr, e := range x.Table {
		if e == nil || e.Free {
			continue
		}
		if d, ok := e.Object.(types.Dict); ok {
			if s := actionType(d); dangerous[s] {
				c.bad[nr] = s + " action"
			}
		}
	}
	for nr, e := range x.Table {
		if e == nil || e.Free {
			continue
		}
		if d, ok := e.Object.(types.Dict); ok {
			if kind := c.badLink(d); kind != "" {
				c.bad[nr] = kind
			}
		}
	}
	if root, err := x.Catalog(); err == nil && root != nil {
		c.catalog(x, root)
	}
	for nr, e := range x.Table {
		if e == nil || e.Free || e.Object == nil {
			continue
		}
		if _, isBad := c.bad[nr]; isBad {
			continue // unreferenced once every reference is gone
		}
		e.Object = c.object(e.Object)
	}
	return removed
}

// actionType is the /S of an action dictionary ("" for anything else).
func actionType(d types.Dict) string {
	if t := d.Type(); t != nil && *t != "Action" {
		return ""
	}
	if s := d.NameEntry("S"); s != nil {
		return *s
	}
	return ""
}

type cleaner struct {
	bad     map[int]string
	removed Removed
}

// catalog removes what only the document catalog holds.
func (c *cleaner) catalog(x *model.XRefTable, root types.Dict) {
	if o, ok := root.Find("OpenAction"); ok {
		// An array is an initial view (a destination), not an action.
		if d, err := x.Dereference(o); err == nil {
			if _, isDest := d.(types.Array); !isDest {
				root.Delete("OpenAction")
				c.removed.add("OpenAction")
			}
		}
	}
	if o, ok := root.Find("Names"); ok {
		if names, err := x.DereferenceDict(o); err == nil && names != nil {
			if _, ok := names.Find("JavaScript"); ok {
				names.Delete("JavaScript")
				c.removed.add("document JavaScript")
			}
			if names.Len() == 0 {
				root.Delete("Names")
			}
		}
	}
	// NOTE: pdfcpu keeps the name trees it validated apart from the
	// dictionaries and binds them back when writing.
	if x.Names != nil {
		if _, ok := x.Names["JavaScript"]; ok {
			delete(x.Names, "JavaScript")
			c.removed["document JavaScript"] = max(c.removed["document JavaScript"], 1)
		}
	}
	if o, ok := root.Find("AcroForm"); ok {
		if form, err := x.DereferenceDict(o); err == nil && form != nil {
			if _, ok := form.Find("XFA"); ok {
				form.Delete("XFA")
				c.removed.add("XFA form")
			}
		}
	}
	root.Delete("NeedsRendering")
}

// object returns o without active content: additional actions dropped,
// dangerous actions (inline or referenced) taken out of dictionaries and
// arrays. References are not followed: each object of the table is cleaned
// on its own.
func (c *cleaner) object(o types.Object) types.Object {
	switch v := o.(type) {
	case types.Dict:
		c.dict(v)
	case types.StreamDict:
		c.dict(v.Dict)
		return v
	case types.Array:
		out := v[:0]
		for _, e := range v {
			if c.isBad(e) {
				continue
			}
			out = append(out, c.object(e))
		}
		return out
	}
	return o
}

func (c *cleaner) dict(d types.Dict) {
	if _, ok := d.Find("AA"); ok {
		d.Delete("AA")
		c.removed.add("additional actions")
	}
	for k, v := range d {
		if c.isBad(v) {
			delete(d, k)
			continue
		}
		d[k] = c.object(v)
	}
}

// isBad tells a dangerous action or a link that runs one, inline or by
// reference, and counts it.
func (c *cleaner) isBad(o types.Object) bool {
	switch v := o.(type) {
	case types.IndirectRef:
		if kind, ok := c.bad[v.ObjectNumber.Value()]; ok {
			c.removed.add(kind)
			return true
		}
	case types.Dict:
		if s := actionType(v); dangerous[s] {
			c.removed.add(s + " action")
			return true
		}
		if kind := c.badLink(v); kind != "" {
			c.removed.add(kind)
			return true
		}
	}
	return false
}

// badLink returns the kind of dangerous action a link annotation runs
// ("" when d is not such a link). Such a link goes as a whole: a link
// left without an action crashes some poppler tools.
func (c *cleaner) badLink(d types.Dict) string {
	if st := d.Subtype(); st == nil || *st != "Link" {
		return ""
	}
	switch a := d["A"].(type) {
	case types.IndirectRef:
		return c.bad[a.ObjectNumber.Value()]
	case types.Dict:
		if s := actionType(a); dangerous[s] {
			return s + " action"
		}
	}
	return ""
}

// readConf is how documents are read here: relaxed, as the other steps
// read them.
func readConf() *model.Configuration {
	conf := pdfconf.New()
	conf.ValidationMode = model.ValidationRelaxed
	return conf
}

// Rewrite writes in to out without active content and says what it
// removed. pdfcpu rewrites the document; a PDF that pdfcpu cannot read
// (poppler can: it passed the conversion step's check) is rendered anew
// by poppler's pdftocairo, which keeps text, pictures and vector graphics
// and writes no actions, forms or scripts at all.
func Rewrite(ctx context.Context, in, out string, timeout time.Duration) (Removed, error) {
	removed, err := rewriteInProcess(in, out)
	if err == nil {
		return removed, nil
	}
	os.Remove(out)
	bin, lerr := proc.Look("pdftocairo")
	if lerr != nil {
		return nil, lerr
	}
	if _, perr := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"-pdf", in, out}, Timeout: timeout}); perr != nil {
		if c := docflow.ErrorCode(perr); c == docflow.ETIMEOUT || c == docflow.EUNAVAILABLE || ctx.Err() != nil {
			return nil, perr
		}
		return nil, docflow.Errorf(docflow.EINVALID, "remove active content: the PDF can be read neither by pdfcpu (%v) nor by poppler: %v", err, perr)
	}
	return Removed{"everything interactive (redrawn by poppler)": 1}, nil
}

func rewriteInProcess(in, out string) (removed Removed, err error) {
	// NOTE: hostile input must not crash the worker.
	defer func() {
		if r := recover(); r != nil {
			removed, err = nil, fmt.Errorf("pdfcpu panicked: %v", r)
		}
	}()
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pctx, err := api.ReadAndValidate(f, readConf())
	if err != nil {
		return nil, err
	}
	removed = Clean(pctx)
	w, err := os.Create(out)
	if err != nil {
		return nil, err
	}
	if err := api.Write(pctx, w, pctx.Configuration); err != nil {
		w.Close()
		return nil, err
	}
	return removed, w.Close()
}

// Inspect reads a PDF and says what Clean would remove, without writing.
func Inspect(r io.ReadSeeker) (Removed, error) {
	pctx, err := api.ReadAndValidate(r, readConf())
	if err != nil {
		return nil, err
	}
	return Clean(pctx), nil
}
