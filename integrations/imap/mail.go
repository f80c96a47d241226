package imap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime"
	"strings"
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

// readMail reads one mail from r (streamed, never held whole) and hands
// each of its attachments of a supported type to sink, at most
// MaxAttachments; the rest are logged. It returns the documents taken in.
// It finishes the mail (sink.MailDone) unless an error is returned.
func (k *Client) readMail(ctx context.Context, uid uint32, r *trackReader, sink Sink, log zerolog.Logger) (int, error) {
	log = log.With().Uint32("uid", uid).Logger()
	mr, err := mail.CreateReader(r)
	if r.err != nil {
		return 0, connErr(r.err)
	}
	if err != nil && !message.IsUnknownCharset(err) {
		// Not even a header: finish the mail under its UID.
		log.Warn().Err(err).Msg("imap: malformed mail skipped")
		return 0, k.done(ctx, sink, messageKey("", k.uidValidity, uid))
	}
	defer mr.Close()
	info := MailInfo{UID: uid}
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
	key := messageKey(info.MessageID, k.uidValidity, uid)
	log = log.With().Str("message_key", key).Logger()
	finished, taken, err := sink.MailSeen(ctx, key)
	if err != nil {
		return 0, err
	}
	if finished {
		return 0, nil // taken in before a restart that came before its flag
	}
	had := map[int]bool{}
	for _, i := range taken {
		had[i] = true
	}
	ingested, index, refused, beyond := 0, -1, 0, 0
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if r.err != nil {
			return ingested, connErr(r.err)
		}
		if err != nil && !message.IsUnknownCharset(err) {
			// The rest of the mail cannot be parsed; what came before stands.
			log.Warn().Err(err).Msg("imap: malformed MIME part; rest of mail skipped")
			break
		}
		name, ok := attachmentName(p.Header)
		if !ok {
			continue // a body part
		}
		index++
		if had[index] {
			continue
		}
		clean := docflow.CleanFilename(name)
		if _, ok := docflow.SupportedFileTypes()[ext(clean)]; !ok {
			refused++
			log.Info().Str("filename", clean).Msg("imap: attachment of an unsupported type skipped")
			continue
		}
		if ingested+len(taken) >= k.cfg.MaxAttachments {
			beyond++
			continue
		}
		err = sink.Ingest(ctx, &Attachment{MessageKey: key, Index: index, Filename: clean, Body: p.Body, Mail: info})
		if r.err != nil {
			// The connection broke under the attachment: not its fault.
			return ingested, connErr(r.err)
		}
		switch docflow.ErrorCode(err) {
		case "":
			ingested++
		case docflow.ECONFLICT:
			// Taken in by another process meanwhile.
		case docflow.EBADREQUEST, docflow.ETOOLARGE:
			refused++
			log.Warn().Err(err).Str("filename", clean).Msg("imap: attachment refused")
		default:
			return ingested, err
		}
	}
	if beyond > 0 {
		log.Warn().Int("skipped", beyond).Int("max_attachments", k.cfg.MaxAttachments).
			Msg("imap: mail has more attachments than max_attachments; the rest skipped")
	}
	if r.err != nil {
		return ingested, connErr(r.err)
	}
	if ingested == 0 && len(taken) == 0 {
		log.Info().Int("refused", refused).Msg("imap: mail without a usable attachment")
	}
	return ingested, k.done(ctx, sink, key)
}

func (k *Client) done(ctx context.Context, sink Sink, key string) error {
	return sink.MailDone(ctx, key)
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
			return k.cmdErr(fmt.Errorf("move to %q: %w", k.cfg.MoveToFolder, err))
		}
	case k.cfg.DeleteAfterProcess:
		flags := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen, imap.FlagDeleted}}
		if err := k.c.Store(set, flags, nil).Close(); err != nil {
			return k.cmdErr(fmt.Errorf("flag deleted: %w", err))
		}
		var err error
		if k.c.Caps().Has(imap.CapUIDPlus) || k.c.Caps().Has(imap.CapIMAP4rev2) {
			err = k.c.UIDExpunge(set).Close()
		} else {
			err = k.c.Expunge().Close()
		}
		if err != nil {
			return k.cmdErr(fmt.Errorf("expunge: %w", err))
		}
	default:
		flags := &imap.StoreFlags{Op: imap.StoreFlagsAdd, Silent: true, Flags: []imap.Flag{imap.FlagSeen}}
		if err := k.c.Store(set, flags, nil).Close(); err != nil {
			return k.cmdErr(fmt.Errorf("flag seen: %w", err))
		}
	}
	return nil
}
