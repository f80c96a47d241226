-- Integrations: the status the actor running an integration reports
-- (decisions.md: {state, last_poll_at, messages_seen, documents_ingested,
-- deliveries_ok, deliveries_failed}), apart from `state`, which holds the
-- actor's own cursors (IMAP UIDs…). Written by
-- IntegrationService.RecordIntegrationStatus; counters only grow.
ALTER TABLE integrations ADD COLUMN IF NOT EXISTS status JSONB NOT NULL DEFAULT '{}';
