// Package postgres implements docflow's stores on PostgreSQL with pgx/v5:
// every SQL statement of the service lives here. Each store implements the
// root package's interface of the same name (FileStore, SettingsStore,
// TokenStore…) or one its consumer declares (the engine's pipeline.Store,
// the relay's OutboxStore). Driver errors reach callers as docflow codes
// (errors.go): unreachable, restarting, overloaded or conflicting is
// EUNAVAILABLE, a foreign key violation ENOTFOUND, never PostgreSQL's own.
//
// The database:
//   - db.go: Open, the pool, and the migrations (migrations/*.sql, embedded,
//     applied at start under an advisory lock).
//   - errors.go: driver errors as docflow codes, and retryConflicts for
//     transactions a deadlock may abort.
//   - cipher.go: AES-256-GCM for secrets at rest, keyed from SESSION_SECRET.
//   - settings.go: the settings store (database, then environment, then
//     the catalogue's default; sensitive values sealed; values checked,
//     several in one transaction); settings_listen.go, every process's
//     listener that reloads them when the table's trigger notifies
//     docflow_settings.
//   - outbox.go: the one owner of the outbox table: Enqueue inside the
//     caller's transaction, and the relay's side (lock due rows, mark them
//     sent, LISTEN docflow_outbox, delete old rows).
//   - testdb.go: OpenTestDB, throwaway databases cloned from a migrated
//     template, for the tests of every package.
//
// Files and their runs:
//   - idempotency.go: the Idempotency-Key store: keys claimed, completed
//     with their answer, released, expired ones swept.
//   - ratelimit.go: the rate limits every process shares: permits of a
//     sliding-window counter leased in one statement, expired windows
//     swept (internal/ratelimit spends the leases).
//   - ingest.go, upload_policy.go: intake's writes (a docflow.IngestRecord
//     in one transaction, the duplicate check and the daily count inside
//     it) and the uploader's limits.
//   - file.go: file records, statuses and processing logs.
//   - blobref.go: the blob references and the blob sweep's lock.
//   - listing.go, listplan.go, listfilter.go, listvisible.go, listcache.go,
//     namesearch.go: the files listing (listplan.go chooses its plan from
//     the filter alone, listing.go runs it), the
//     WHERE clause of a filter, one user's listing from file_access, the
//     cached totals and page anchors, the filename search over file_names.
//   - run.go, run_claim.go, run_result.go, run_route.go, run_recover.go,
//     run_worker.go: RunStore, the engine's pipeline.Store: step leases,
//     step results, routing, recovery and stall detection, heartbeats and
//     the queue summary.
//   - embedding_runs.go: the runs of the compute_embedding step alone.
//   - pipeline.go, routing.go, classification.go: pipelines and their
//     steps, routing rules, classification rules.
//   - search.go: saved searches, the indexer's documents, embeddings and
//     similarity pairs.
//
// People and working together:
//   - accounts.go, accounts_update.go, accounts_revoke.go: local accounts
//     and reset links; a patch (an e-mail change moves every owner column);
//     deactivation, set-password and reset revoke tokens, spend reset links
//     and end sessions in their transaction.
//   - userstate.go: what local_users says of a user id now.
//   - token.go, session.go, mobile_code.go: API tokens, sessions, the
//     mobile hand-off's one-time codes.
//   - mobile.go: the phone app's profile facts and language preference,
//     the QR login's challenges.
//   - sso.go, sso_links.go: single sign-on (attempts taken once, identities
//     bound to issuer and subject), and the administrators' links.
//   - authmode.go: the authentication mode HTTP processes started in, and
//     what a single-user period left.
//   - profiles.go, profile_signup.go, users.go: profiles and their
//     statistics, sign-ups, users search and mentionable users.
//   - audit.go: the audit log.
//   - reset.go: the system reset's SQL: the content tables (read from the
//     schema), their counts, the wipe in one transaction, the originals a
//     reimport takes back, the reset lock.
//   - ownership.go: claims (decided by docflow.FileAccess under the rows'
//     locks), share roles, assigned owners.
//   - batchload.go: the comments, shares and processing logs of many
//     files in one statement each.
//   - shares.go, comments.go, mentions.go, annotations.go: shares, comments,
//     the resolution of @mentions and the viewer shares they give,
//     annotations.
//
// Events out and integrations:
//   - webhook.go, delivery_batch.go, hook_deliveries.go: webhooks, the
//     fan-out of events to every subscriber, deliveries and their attempts
//     (recorded a batch at a time), the failing flag, a hook's log.
//   - automation_hook.go, automation_hook_update.go: automation hooks.
//   - device.go: the devices registered for push.
//   - destinations.go: the deliveries to storage destinations (one row per
//     file, destination and request, queued with its task message; their
//     outcomes, what a file shows of them).
//   - integrations.go: the users' integrations (credentials sealed, the
//     quota checked in the create's transaction).
//   - integration_alerts.go: the claim of integrations failing too long.
//   - integration_credentials.go: a refresh token a provider rotated, kept
//     in place of the stored one.
//   - imap_sources.go: the IMAP sources' leases, shared fairly among live
//     workers, their reports and the mails they finished, fenced by the
//     settings' generation.
//
// The database wizard:
//   - external.go: one connection to a database an administrator names
//     (through the dial func handed in), its version, identity and tables;
//     the original service's PostgreSQL database as a docflow.LegacySource.
//   - migration_jobs.go: the wizard's jobs, leased to one process, resumed
//     when it stops.
//   - dbcopy.go: the copy of docflow's database into another PostgreSQL,
//     batch by batch with its progress in the target's transaction.
//   - legacy_import.go, legacy_map.go, legacy_map_events.go,
//     legacy_values.go: the import of the original service's database:
//     the schema's check, the batches and legacy_import_rows (what each
//     source row became), the mapping of each table (webhooks and
//     integrations apart), the reading of its values.
//   - legacy_contents.go: where each imported file's content stands (the
//     blobs its record points at, what did not come and why), for the
//     wizard's contents pass.
//
// Fixtures, never called by the service:
//   - imap_fixtures.go: IMAP sources for tests and benchmarks.
//   - benchdata.go: what cmd/docflow-bench seeds and measures, so the
//     benchmarks write no SQL.
package postgres
