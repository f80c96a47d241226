package docflow

import "time"

// MailCursor is where an IMAP source stands in its folder: the folder's
// UIDVALIDITY and the highest UID up to which every mail is finished.
type MailCursor struct {
	UIDValidity uint32 `json:"uidvalidity"`
	LastUID     uint32 `json:"last_uid"`
}

// SourceClaim is one active source a process holds the lease of, as the
// process runs it: the record with its credentials decrypted, the status
// counters and the cursor saved last.
type SourceClaim struct {
	Integration *Integration
	Cursor      MailCursor
	// Generation is the generation of the integration's settings, moved
	// in the transaction of every change of its config, credentials or
	// active flag: mails are taken in only under the current one, so a
	// change stops the source before the API answers.
	Generation int64
}

// SourceReport is what the process running a source records in its row:
// the status, the cursor, the last error ("" clears it) and, when
// documents were ingested, the time to record as last_used_at.
type SourceReport struct {
	Status    IntegrationStatus
	Cursor    MailCursor
	LastError string
	UsedAt    *time.Time
	// Generation is the settings' generation the source ran under: the
	// report of an older one is not recorded.
	Generation int64
}
