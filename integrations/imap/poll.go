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
	// attachments were taken in. It is asked before a large attachment is
	// streamed; small ones are simply offered again (ECONFLICT).
	MailSeen(ctx context.Context, key string) (done bool, attachments []int, err error)
	// Ingest takes one attachment in, with the record that it was, in one
	// transaction. ECONFLICT: taken in before (by any process); EBADREQUEST
	// or ETOOLARGE: refused for good (empty, unsupported content, too
	// large); ENOTFOUND: the integration is gone. Other errors are
	// transient: the mail is tried again.
	Ingest(ctx context.Context, a *Attachment) error
	// MailsDone records that the mails keys are finished.
	MailsDone(ctx context.Context, keys []string) error
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
		return res, k.cmdErr("SEARCH", err)
	}
	var uids []imap.UID
	for _, u := range sd.AllUIDs() {
		if uint32(u) >= start { // "n:*" names the last mail even below n
			uids = append(uids, u)
		}
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	deadline := time.Now().Add(budget)
	// Small attachments go in concurrently (ingestConcurrency at a time)
	// while the next mails are fetched: each ingest waits for its own
	// durable write, and one source must not be bound by that latency.
	sem := make(chan struct{}, ingestConcurrency)
	var all []*pending
	var perr error
	for i := 0; i < len(uids); i += fetchBatch {
		if i > 0 && time.Now().After(deadline) {
			res.More = true
			break
		}
		ps, err := k.take(ctx, uids[i:min(i+fetchBatch, len(uids))], sink, sem, log)
		all = append(all, ps...)
		if err != nil {
			perr = err
			break
		}
	}
	var done []imap.UID
	var keys []string
	for _, p := range all {
		p.wg.Wait()
		res.Ingested += int(p.ingested.Load())
	}
	// Mails are finished in order, up to the first that is not.
	for _, p := range all {
		if p.failed {
			break
		}
		if p.err != nil {
			perr = errors.Join(perr, p.err)
			break
		}
		if !p.finished {
			keys = append(keys, p.key)
		}
		done = append(done, p.uid)
	}
	if len(keys) > 0 {
		if err := sink.MailsDone(ctx, keys); err != nil {
			return res, errors.Join(perr, sinkErr(err))
		}
	}
	res.Seen = len(done)
	if len(done) > 0 {
		if err := k.finish(done); err != nil {
			return res, errors.Join(perr, err)
		}
		res.Cursor.LastUID = uint32(done[len(done)-1])
	}
	return res, perr
}

// fetchBatch is how many mails one FETCH asks for: their bodies stream one
// after the other, without a round trip each.
const fetchBatch = 50

// take fetches the mails uids (ascending) in one command and hands their
// attachments to sink; it returns the mails read, in UID order. A mail that
// cannot be read as MIME is returned to be finished as it is (logged), not
// tried again. After an error the rest of the batch is skipped.
func (k *Client) take(ctx context.Context, uids []imap.UID, sink Sink, sem chan struct{}, log zerolog.Logger) ([]*pending, error) {
	cmd := k.c.Fetch(imap.UIDSetNum(uids...), &imap.FetchOptions{
		UID:         true,
		BodySection: []*imap.FetchItemBodySection{{Peek: true}},
	})
	var out []*pending
	var terr error
	var alone []imap.UID // bodies that came before their UID
	broken := false
msgs:
	for msg := cmd.Next(); msg != nil; msg = cmd.Next() {
		var uid imap.UID
		for item := msg.Next(); item != nil; item = msg.Next() {
			switch it := item.(type) {
			case imapclient.FetchItemDataUID:
				uid = it.UID
			case imapclient.FetchItemDataBodySection:
				if terr != nil || it.Literal == nil {
					continue
				}
				if uid == 0 {
					// Servers send the UID first; one that does not is
					// asked for this mail alone.
					alone = append(alone, 0)
					continue
				}
				tr := &trackReader{r: it.Literal, size: it.Literal.Size()}
				p, err := k.readMail(ctx, uid, tr, sink, sem, log)
				if err == nil {
					// The rest of the literal must be read before the
					// next mail; a mail left half-read is drained here.
					_, err = io.Copy(io.Discard, tr)
				}
				if tr.err != nil {
					err = connErr(fmt.Errorf("fetch mail %d: %w", uid, tr.err))
				}
				if p != nil {
					p.failed = err != nil
					out = append(out, p)
				}
				terr = err
				if IsConnection(err) {
					// NOTE: the library drains a literal left unread on the
					// next step, racing its own reader when the connection
					// is gone: the client is closed and left as it is.
					broken = true
					break msgs
				}
			}
		}
	}
	if broken {
		k.conn.abort()
		k.c.Close() //nolint:errcheck
		sort.Slice(out, func(i, j int) bool { return out[i].uid < out[j].uid })
		return out, terr
	}
	if err := cmd.Close(); err != nil && terr == nil {
		terr = k.cmdErr("FETCH", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].uid < out[j].uid })
	if terr == nil && len(alone) > 0 {
		// Which mails came without UID: those asked for and not read.
		got := map[imap.UID]bool{}
		for _, p := range out {
			got[p.uid] = true
		}
		for _, u := range uids {
			if !got[u] && len(uids) > 1 {
				ps, err := k.take(ctx, []imap.UID{u}, sink, sem, log)
				out = append(out, ps...)
				if err != nil {
					terr = err
					break
				}
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].uid < out[j].uid })
	}
	// Mails expunged meanwhile by another client are simply not there.
	return out, terr
}
