package http

import (
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// auditIDsPerEntry is how many file ids one audit entry of a bulk action
// names; a larger action is recorded as several entries, so that no id is
// lost to the length of an entry's detail.
const auditIDsPerEntry = 400

// auditFile records action on one file, described by what.
func (s *Server) auditFile(c *fasthttp.RequestCtx, action string, id int64, what string) {
	s.audit(c, docflow.AuditEntry{Action: action, Target: "file:" + strconv.FormatInt(id, 10), Detail: what})
}

// auditFiles records action on the files ids (none: nothing), each entry
// reading "<what>: <ids>" with at most auditIDsPerEntry ids.
func (s *Server) auditFiles(c *fasthttp.RequestCtx, action, what string, ids []int64) {
	for len(ids) > 0 {
		n := min(len(ids), auditIDsPerEntry)
		var b strings.Builder
		b.WriteString(what)
		b.WriteString(": ")
		for i, id := range ids[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatInt(id, 10))
		}
		s.audit(c, docflow.AuditEntry{Action: action, Target: "files", Detail: b.String()})
		ids = ids[n:]
	}
}

// fileLabel names a file in an audit entry: its id, name and owner.
func fileLabel(f *docflow.File) string {
	owner := "no owner"
	if f.OwnerID != nil {
		owner = "owner " + *f.OwnerID
	}
	return "file " + strconv.FormatInt(f.ID, 10) + " (" + f.OriginalFilename + ", " + owner + ")"
}
