package imap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/rs/zerolog"

	"docflow"
)

// maxKeyLen bounds a message key: longer Message-IDs are hashed.
const maxKeyLen = 200

// messageKey is the mail's key for deduplication: its Message-ID, or its
// UIDVALIDITY and UID when it has none.
func messageKey(messageID string, uidValidity, uid uint32) string {
	if messageID == "" {
		return fmt.Sprintf("uid:%d:%d", uidValidity, uid)
	}
	if len(messageID) > maxKeyLen {
		sum := sha256.Sum256([]byte(messageID))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	return "<" + messageID + ">"
}

// Concurrent ingests: attachments up to smallAttachment bytes are read
// into memory and go in ingestConcurrency at a time per poll (at most
// ingestConcurrency × smallAttachment bytes held); larger ones stream
// straight from the connection, one at a time.
const (
	ingestConcurrency = 32
	smallAttachment   = 512 << 10
)

// pending is a mail read to its end whose attachments may still be going
// in.
type pending struct {
	uid      imap.UID
	key      string
	finished bool // finished before: nothing to record
	failed   bool // the mail could not be read to its end
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error // the first transient error of an attachment
	ingested atomic.Int32
}

func (p *pending) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
}

// readMail reads one mail from r (streamed, never held whole) and hands
// each of its attachments of a supported type to sink, at most
// MaxAttachments; the rest are logged. The mail is finished by the caller
// once its attachments are in.
func (k *Client) readMail(ctx context.Context, uid imap.UID, r *trackReader, sink Sink, sem chan struct{}, log zerolog.Logger) (*pending, error) {
	log = log.With().Uint32("uid", uint32(uid)).Logger()
	p := &pending{uid: uid}
	mr, err := mail.CreateReader(r)
	if r.err != nil {
		return p, connErr(r.err)
	}
	if err != nil && !message.IsUnknownCharset(err) {
		// Not even a header: finish the mail under its UID.
		log.Warn().Err(err).Msg("imap: malformed mail skipped")
		p.key = messageKey("", k.uidValidity, uint32(uid))
		return p, nil
	}
	defer mr.Close()
	info := MailInfo{UID: uint32(uid)}
	h := mr.Header
	info.MessageID, _ = h.MessageID()
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		info.From = from[0].String()
	} else {
		info.From = h.Get("From")
	}
	if s, err := h.Subject(); err == nil {
		info.Subject = s
	}
	if d, err := h.Date(); err == nil && !d.IsZero() {
		info.Date = d.UTC().Format(time.RFC3339)
	}
	p.key = messageKey(info.MessageID, k.uidValidity, uint32(uid))
	log = log.With().Str("message_key", p.key).Logger()
	// What was taken in before is asked once, before the first large
	// attachment: a small one offered again is refused by storage
	// (ECONFLICT) at the cost of a few reads.
	var had map[int]bool
	seen := func() (finished bool, err error) {
		if had != nil {
			return false, nil
		}
		finished, taken, err := sink.MailSeen(ctx, p.key)
		if err != nil {
			return false, sinkErr(err)
		}
		had = map[int]bool{}
		for _, i := range taken {
			had[i] = true
		}
		return finished, nil
	}
	// result sorts an ingest's outcome; it reports the transient errors.
	result := func(name string, err error) error {
		switch docflow.ErrorCode(err) {
		case "":
			p.ingested.Add(1)
		case docflow.ECONFLICT:
			// Taken in by another process meanwhile.
		case docflow.EBADREQUEST, docflow.ETOOLARGE:
			log.Warn().Err(err).Str("filename", name).Msg("imap: attachment refused")
		default:
			return sinkErr(err)
		}
		return nil
	}
	tried, index, beyond := 0, -1, 0
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if r.err != nil {
			return p, connErr(r.err)
		}
		if err != nil && !message.IsUnknownCharset(err) {
			// The rest of the mail cannot be parsed; what came before stands.
			log.Warn().Err(err).Msg("imap: malformed MIME part; rest of mail skipped")
			break
		}
		name, ok := attachmentName(part.Header)
		if !ok {
			continue // a body part
		}
		index++
		clean := docflow.CleanFilename(name)
		if _, ok := docflow.SupportedFileTypes()[ext(clean)]; !ok {
			log.Info().Str("filename", clean).Msg("imap: attachment of an unsupported type skipped")
			continue
		}
		if tried >= k.cfg.MaxAttachments {
			beyond++
			continue
		}
		tried++
		a := &Attachment{MessageKey: p.key, Index: index, Filename: clean, Mail: info}
		head, rerr := io.ReadAll(io.LimitReader(part.Body, smallAttachment+1))
		if r.err != nil {
			return p, connErr(r.err)
		}
		if rerr != nil {
			// Undecodable (bad base64 and the like): the mail's fault.
			log.Warn().Err(rerr).Str("filename", clean).Msg("imap: attachment refused: cannot be decoded")
			continue
		}
		if len(head) <= smallAttachment {
			a.Body = bytes.NewReader(head)
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return p, ctx.Err()
			}
			p.wg.Add(1)
			go func() {
				defer func() { <-sem; p.wg.Done() }()
				if err := result(clean, sink.Ingest(ctx, a)); err != nil {
					p.fail(err)
				}
			}()
			continue
		}
		finished, err := seen()
		if err != nil {
			return p, err
		}
		if finished {
			// Taken in before a restart that came before its flag.
			p.finished = true
			return p, nil
		}
		if had[index] {
			continue
		}
		a.Body = io.MultiReader(bytes.NewReader(head), part.Body)
		err = sink.Ingest(ctx, a)
		if r.err != nil {
			// The connection broke under the attachment: not its fault.
			return p, connErr(r.err)
		}
		if err := result(clean, err); err != nil {
			return p, err
		}
	}
	if r.err != nil {
		return p, connErr(r.err)
	}
	if beyond > 0 {
		log.Warn().Int("skipped", beyond).Int("max_attachments", k.cfg.MaxAttachments).
			Msg("imap: mail has more attachments than max_attachments; the rest skipped")
	}
	if tried == 0 {
		log.Info().Msg("imap: mail without a usable attachment")
	}
	return p, nil
}

// attachmentName is the part's file name, if it is an attachment: a part
// with a file name, or one marked attachment (named after its type then).
func attachmentName(h mail.PartHeader) (string, bool) {
	var disp, name string
	var ctype string
	switch h := h.(type) {
	case *mail.AttachmentHeader:
		disp = "attachment"
		name, _ = h.Filename()
		ctype, _, _ = h.ContentType()
	case *mail.InlineHeader:
		var params map[string]string
		ctype, params, _ = h.ContentType()
		if _, dp, err := h.ContentDisposition(); err == nil {
			name = dp["filename"]
		}
		if name == "" {
			name = params["name"]
		}
		if name != "" {
			if dec, err := new(mime.WordDecoder).DecodeHeader(name); err == nil {
				name = dec
			}
		}
	}
	if name != "" {
		return name, true
	}
	if disp == "" {
		return "", false
	}
	for e, t := range docflow.SupportedFileTypes() {
		if t == strings.ToLower(ctype) && e != "jpeg" && e != "tif" {
			return "attachment." + e, true
		}
	}
	return "attachment", true
}

// ext is name's lower-case extension without the dot.
func ext(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	return strings.ToLower(name[i+1:])
}

// finish flags, moves or deletes the mails uids, as configured.
func (k *Client) finish(uids []imap.UID) error {
	set := imap.UIDSetNum(uids...)
	switch {
	case k.cfg.MoveToFolder != "":
		if _, err := k.c.Move(set, k.cfg.MoveToFolder).Wait(); err != nil {
			return k.cmdErr(fmt.Sprintf("moving mail to %q", k.cfg.MoveToFolder), err)
		}
	case k.cfg.DeleteAfterProcess:
		flags := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen, imap.FlagDeleted}}
		if err := k.c.Store(set, flags, nil).Close(); err != nil {
			return k.cmdErr("flagging mail deleted", err)
		}
		var err error
		if k.c.Caps().Has(imap.CapUIDPlus) || k.c.Caps().Has(imap.CapIMAP4rev2) {
			err = k.c.UIDExpunge(set).Close()
		} else {
			err = k.c.Expunge().Close()
		}
		if err != nil {
			return k.cmdErr("EXPUNGE", err)
		}
	default:
		flags := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}
		if err := k.c.Store(set, flags, nil).Close(); err != nil {
			return k.cmdErr("flagging mail seen", err)
		}
	}
	return nil
}
