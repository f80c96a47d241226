// Package imaptest runs IMAP servers for tests: go-imap's in-memory server
// and a real Dovecot on a free loopback port with a temporary maildir, and
// builds mails with attachments to deliver into them.
package imaptest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
)

// Attachment is one attachment of a built mail.
type Attachment struct {
	Name, ContentType string
	Data              []byte
}

// Mail builds a multipart mail with a text body and the attachments
// (base64). An empty messageID leaves the header out.
func Mail(messageID, subject string, atts ...Attachment) []byte {
	var b bytes.Buffer
	boundary := "docflow-boundary-42"
	b.WriteString("From: Alice Sender <alice@example.com>\r\nTo: inbox@example.com\r\n")
	fmt.Fprintf(&b, "Subject: %s\r\nDate: %s\r\n", subject, time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC).Format(time.RFC1123Z))
	if messageID != "" {
		fmt.Fprintf(&b, "Message-ID: <%s>\r\n", messageID)
	}
	fmt.Fprintf(&b, "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=%q\r\n\r\n", boundary)
	fmt.Fprintf(&b, "--%s\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease find the documents attached.\r\n", boundary)
	for _, a := range atts {
		ct := a.ContentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		fmt.Fprintf(&b, "--%s\r\nContent-Type: %s\r\nContent-Disposition: attachment; filename=%q\r\nContent-Transfer-Encoding: base64\r\n\r\n", boundary, ct, a.Name)
		enc := base64.StdEncoding.EncodeToString(a.Data)
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\r\n")
	}
	fmt.Fprintf(&b, "--%s--\r\n", boundary)
	return b.Bytes()
}

// PDF is a small valid-looking PDF whose content is unique for seed, padded
// to at least size bytes.
func PDF(seed string, size int) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n")
	fmt.Fprintf(&b, "%% %s\n", seed)
	for b.Len() < size {
		b.WriteString("% " + strings.Repeat("x", 70) + "\n")
	}
	b.WriteString("trailer << /Root 1 0 R >>\n%%EOF\n")
	return b.Bytes()
}

// Append delivers mails to folder of addr's user over IMAP (one
// connection, plain: loopback test servers only).
func Append(ctx context.Context, addr, user, pass, folder string, mails ...[]byte) error {
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Login(user, pass).Wait(); err != nil {
		return err
	}
	for _, m := range mails {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cmd := c.Append(folder, int64(len(m)), nil)
		if _, err := cmd.Write(m); err != nil {
			return err
		}
		if err := cmd.Close(); err != nil {
			return err
		}
		if _, err := cmd.Wait(); err != nil {
			return err
		}
	}
	return c.Logout().Wait()
}

// Count returns how many mails folder holds and how many of them are
// unseen.
func Count(addr, user, pass, folder string) (total, unseen uint32, err error) {
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	if err := c.Login(user, pass).Wait(); err != nil {
		return 0, 0, err
	}
	sd, err := c.Status(folder, &imap.StatusOptions{NumMessages: true, NumUnseen: true}).Wait()
	if err != nil {
		return 0, 0, err
	}
	return *sd.NumMessages, *sd.NumUnseen, nil
}

// AppendReader delivers one mail of size bytes read from r (plain login,
// loopback test servers only).
func AppendReader(ctx context.Context, addr, user, pass, folder string, r io.Reader, size int64) error {
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Login(user, pass).Wait(); err != nil {
		return err
	}
	cmd := c.Append(folder, size, nil)
	if _, err := io.Copy(cmd, r); err != nil {
		return err
	}
	if err := cmd.Close(); err != nil {
		return err
	}
	if _, err := cmd.Wait(); err != nil {
		return err
	}
	return c.Logout().Wait()
}
