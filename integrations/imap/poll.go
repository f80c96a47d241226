package imap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/rs/zerolog"

	"docflow"
)

// Sink is where a source's mails go (the process's intake and storage).
type Sink interface {
	// MailSeen reports whether the mail key is finished, and which of its
	// attachments were taken in.
	MailSeen(ctx context.Context, key string) (done bool, attachments []int, err error)
	// Ingest takes one attachment in, with the record that it was, in one
	// transaction. ECONFLICT: taken in before (by any process); EBADREQUEST
	// or ETOOLARGE: refused for good (empty, unsupported content, too
	// large); ENOTFOUND: the integration is gone. Other errors are
	// transient: the mail is tried again.
	Ingest(ctx context.Context, a *Attachment) error
	// MailDone records that the mail key is finished.
	MailDone(ctx context.Context, key string) error
}

// Attachment is one attachment of a mail, streamed: Body must be read
// before the next attachment is asked for.
type Attachment struct {
	MessageKey string
	Index      int // position among the mail's attachments, from 0
	Filename   string
	Body       io.Reader
	Mail       MailInfo
}

// MailInfo is what the document records of its mail.
type MailInfo struct {
	MessageID string `json:"message_id,omitempty"`
	From      string `json:"from,omitempty"`
	Subject   string `json:"subject,omitempty"`
	Date      string `json:"date,omitempty"` // RFC 3339
	UID       uint32 `json:"uid"`
}

// PollResult is what one Poll did.
type PollResult struct {
	// Cursor is where the folder stands now: every mail up to LastUID is
	// finished (its attachments taken in, then flagged, moved or deleted).
	Cursor docflow.MailCursor
	// Seen counts the mails looked at, Ingested the documents taken in.
	Seen, Ingested int
	// More: unseen mail is left (the time budget ran out).
	More bool
}

// Poll takes in the unseen mails after cur.LastUID, oldest first, until
// budget is spent, then flags, moves or deletes those it finished. A
// changed UIDVALIDITY starts the folder over (the sink's record of mails
// keeps them from being taken in twice). Connection failures wrap
// ErrConnection; the cursor only passes mails that are finished on the
// server too.
func (k *Client) Poll(ctx context.Context, cur docflow.MailCursor, sink Sink, budget time.Duration, log zerolog.Logger) (PollResult, error) {
	res := PollResult{Cursor: cur}
	if k.c == nil {
		return res, connErr(errors.New("not connected"))
	}
	stop := context.AfterFunc(ctx, k.conn.abort)
	defer stop()
	if err := k.stopIdle(); err != nil {
		return res, err
	}
	if cur.UIDValidity != k.uidValidity {
		res.Cursor = docflow.MailCursor{UIDValidity: k.uidValidity}
	}
	start := res.Cursor.LastUID + 1
	sd, err := k.c.UIDSearch(&imap.SearchCriteria{
		UID:     []imap.UIDSet{{imap.UIDRange{Start: imap.UID(start), Stop: 0}}},
		NotFlag: []imap.Flag{imap.FlagSeen, imap.FlagDeleted},
	}, nil).Wait()
	if err != nil {
		return res, k.cmdErr(fmt.Errorf("search: %w", err))
	}
	var uids []imap.UID
	for _, u := range sd.AllUIDs() {
		if uint32(u) >= start { // "n:*" names the last mail even below n
			uids = append(uids, u)
		}
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	deadline := time.Now().Add(budget)
	var done []imap.UID
	var perr error
	for i, uid := range uids {
		if i > 0 && time.Now().After(deadline) {
			res.More = true
			break
		}
		n, err := k.take(ctx, uid, sink, log)
		res.Ingested += n
		if err != nil {
			perr = err
			break
		}
		res.Seen++
		done = append(done, uid)
	}
	if len(done) > 0 {
		if err := k.finish(done); err != nil {
			return res, errors.Join(perr, err)
		}
		res.Cursor.LastUID = uint32(done[len(done)-1])
	}
	return res, perr
}

// take fetches the mail uid and hands its attachments to sink; it returns
// the documents taken in. A mail that cannot be read as MIME is finished as
// it is (logged), not tried again.
func (k *Client) take(ctx context.Context, uid imap.UID, sink Sink, log zerolog.Logger) (int, error) {
	cmd := k.c.Fetch(imap.UIDSetNum(uid), &imap.FetchOptions{
		UID:         true,
		BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	})
	n, terr := 0, error(nil)
	found := false
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		for item := msg.Next(); item != nil; item = msg.Next() {
			body, ok := item.(imapclient.FetchItemDataBodySection)
			if !ok || found || body.Literal == nil {
				continue
			}
			found = true
			tr := &trackReader{r: body.Literal, size: body.Literal.Size()}
			n, terr = k.readMail(ctx, uint32(uid), tr, sink, log)
			if terr == nil {
				// The rest of the literal must be read before the next
				// command; a mail left half-read is drained here.
				_, terr = io.Copy(io.Discard, tr)
			}
			if tr.err != nil {
				terr = connErr(fmt.Errorf("fetch mail %d: %w", uid, tr.err))
			}
		}
	}
	if err := cmd.Close(); err != nil && terr == nil {
		terr = k.cmdErr(fmt.Errorf("fetch mail %d: %w", uid, err))
	}
	if terr == nil && !found {
		// Expunged meanwhile by another client: nothing to take.
		log.Debug().Uint32("uid", uint32(uid)).Msg("imap: mail gone before fetch")
	}
	return n, terr
}
