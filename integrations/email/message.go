package email

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"docflow"
)

// message is one e-mail carrying one document.
type message struct {
	From      mail.Address
	To        []string
	Subject   string
	MessageID string
	Date      time.Time
	Text      string
	// Name and MimeType are the attachment's.
	Name, MimeType string
}

// newMessage builds the e-mail of doc for integration id.
func newMessage(from mail.Address, to []string, subjectTemplate string, integrationID int64, doc docflow.DestinationDoc) message {
	return message{
		From: from, To: to,
		Subject:   Subject(subjectTemplate, doc),
		MessageID: messageID(doc.FileID, integrationID, from.Address),
		Date:      time.Now(),
		Text:      bodyText(doc),
		Name:      doc.Name,
		MimeType:  doc.MimeType,
	}
}

// messageID is the same for every sending of one document to one
// integration (see the package comment).
func messageID(fileID, integrationID int64, from string) string {
	domain := "docflow.invalid"
	if i := strings.LastIndexByte(from, '@'); i >= 0 && i < len(from)-1 {
		domain = from[i+1:]
	}
	return fmt.Sprintf("<docflow.file-%d.integration-%d@%s>", fileID, integrationID, domain)
}

// Subject fills template's placeholders ({title}, {date},
// {original_filename}, {id}, {category}) with doc's values, on one line
// of at most 250 characters; an empty result is doc's name.
func Subject(template string, doc docflow.DestinationDoc) string {
	s := strings.NewReplacer(
		"{title}", doc.Title,
		"{date}", doc.Date,
		"{original_filename}", doc.OriginalFilename,
		"{id}", strconv.FormatInt(doc.FileID, 10),
		"{category}", doc.Category,
	).Replace(template)
	s = strings.Join(strings.Fields(oneLine(s)), " ")
	if s == "" {
		s = oneLine(doc.Name)
	}
	if utf8.RuneCountInString(s) > maxSubjectRunes {
		s = string([]rune(s)[:maxSubjectRunes-1]) + "…"
	}
	return s
}

// oneLine turns control characters into spaces, so no value can start a
// header of its own.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// bodyText is the mail's text: what the document is, and its metadata.
func bodyText(doc docflow.DestinationDoc) string {
	var b strings.Builder
	title := strings.TrimSpace(oneLine(doc.Title))
	if title == "" {
		title = doc.Name
	}
	fmt.Fprintf(&b, "%s\n\nAttached: %s (%s)\n", title, doc.Name, humanSize(doc.Size))
	for _, f := range []struct{ k, v string }{
		{"Date", doc.Date}, {"Category", doc.Category}, {"Correspondent", doc.Correspondent},
		{"Tags", strings.Join(doc.Tags, ", ")}, {"Original file", doc.OriginalFilename},
	} {
		if v := strings.TrimSpace(oneLine(f.v)); v != "" {
			fmt.Fprintf(&b, "%s: %s\n", f.k, v)
		}
	}
	b.WriteString("\nSent by docflow.\n")
	return b.String()
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// encodedSize is about how many bytes the message of a size-byte
// document takes on the wire: base64 in lines of 76, and room for the
// headers and the text.
func encodedSize(size int64) int64 {
	b64 := (size + 2) / 3 * 4
	return b64 + b64/76*2 + 16<<10
}

// write writes m as a MIME message to w, the attachment's bytes read
// from body as they are sent. Header values are encoded (RFC 2047, RFC
// 2231 for the file name) and folded.
func (m message) write(w io.Writer, body io.Reader) error {
	mw := multipart.NewWriter(w)
	to := make([]string, len(m.To))
	for i, a := range m.To {
		to[i] = (&mail.Address{Address: a}).String()
	}
	headers := []struct{ k, v string }{
		{"From", m.From.String()},
		{"To", strings.Join(to, ",\r\n ")},
		{"Subject", encodeHeader(m.Subject)},
		{"Date", m.Date.Format(time.RFC1123Z)},
		{"Message-ID", m.MessageID},
		{"MIME-Version", "1.0"},
		{"Content-Type", `multipart/mixed; boundary="` + mw.Boundary() + `"`},
	}
	for _, h := range headers {
		if _, err := fmt.Fprintf(w, "%s: %s\r\n", h.k, h.v); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\r\n"); err != nil {
		return err
	}
	text, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {"text/plain; charset=utf-8"},
		"Content-Transfer-Encoding": {"quoted-printable"},
	})
	if err != nil {
		return err
	}
	qp := quotedprintable.NewWriter(text)
	if _, err := io.WriteString(qp, strings.ReplaceAll(m.Text, "\n", "\r\n")); err != nil {
		return err
	}
	if err := qp.Close(); err != nil {
		return err
	}
	ct := "application/octet-stream"
	if mt, _, err := mime.ParseMediaType(m.MimeType); err == nil && strings.Contains(mt, "/") {
		ct = mt
	}
	part, err := mw.CreatePart(textproto.MIMEHeader{
		"Content-Type":              {mime.FormatMediaType(ct, map[string]string{"name": m.Name})},
		"Content-Disposition":       {mime.FormatMediaType("attachment", map[string]string{"filename": m.Name})},
		"Content-Transfer-Encoding": {"base64"},
	})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(part, 32<<10)
	enc := base64.NewEncoder(base64.StdEncoding, &lineWriter{w: bw})
	if _, err := io.Copy(enc, body); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return mw.Close()
}

// encodeHeader encodes a header value outside ASCII as RFC 2047 words,
// one per folded line.
func encodeHeader(s string) string {
	e := mime.QEncoding.Encode("utf-8", s)
	if e == s {
		return s
	}
	return strings.ReplaceAll(e, "?= =?", "?=\r\n =?")
}

// lineWriter breaks base64 text into lines of 76 characters (RFC 2045).
type lineWriter struct {
	w   io.Writer
	col int
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		room := 76 - l.col
		chunk := p[:min(room, len(p))]
		if _, err := l.w.Write(chunk); err != nil {
			return n, err
		}
		n += len(chunk)
		l.col += len(chunk)
		p = p[len(chunk):]
		if l.col == 76 {
			if _, err := l.w.Write([]byte("\r\n")); err != nil {
				return n, err
			}
			l.col = 0
		}
	}
	return n, nil
}
