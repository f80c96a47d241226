package sources

import (
	"context"
	"io"
	"sync/atomic"

	"docflow"
	"docflow/integrations/imap"
)

// sink takes one source's mails in through the one intake path.
type sink struct {
	store  Store
	intake Intake
	in     *docflow.Integration
	// generation is the settings' generation the source runs under: its
	// records are refused once the integration changed (ENOTFOUND).
	generation int64
	// bytes counts the attachment bytes read during the poll (its
	// integration metric). A poll ingests several attachments at once
	// (integrations/imap), each counting here.
	bytes atomic.Int64
}

var _ imap.Sink = (*sink)(nil)

func (k *sink) MailSeen(ctx context.Context, key string) (bool, []int, error) {
	return k.store.MailSeen(ctx, k.in.ID, key)
}

func (k *sink) MailsDone(ctx context.Context, keys []string) error {
	return k.store.MailsDone(ctx, k.in.ID, k.generation, keys)
}

// Ingest takes a in as the integration's owner, on channel email, with the
// mail's From, Subject, Date and Message-ID in the document's metadata
// ("email").
func (k *sink) Ingest(ctx context.Context, a *imap.Attachment) error {
	meta := map[string]any{"integration_id": k.in.ID, "uid": a.Mail.UID}
	for key, v := range map[string]string{"message_id": a.Mail.MessageID, "from": a.Mail.From,
		"subject": a.Mail.Subject, "date": a.Mail.Date} {
		if v != "" {
			meta[key] = v
		}
	}
	_, err := k.intake.IngestMail(ctx, docflow.Upload{
		Filename: a.Filename,
		Body:     &countingReader{r: a.Body, n: &k.bytes},
		Size:     -1,
		User:     &docflow.User{ID: k.in.OwnerID},
		Channel:  docflow.ChannelEmail,
		Metadata: map[string]any{"email": meta},
	}, docflow.MailSeen{IntegrationID: k.in.ID, MessageKey: a.MessageKey, Attachment: a.Index, Generation: k.generation})
	// The intake service records the document's intake metric (channel
	// email, type, bytes, outcome).
	return err
}

// countingReader adds what it reads to *n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
