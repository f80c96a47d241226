// Package docflow holds the domain of the document-processing service: its
// records, the interfaces that adapters implement (each named after what it
// stores, ending in Store), the error codes, the settings catalogue, and the
// pure rules every adapter applies the same way. It imports nothing but the
// standard library; every other package may import it.
//
// Its files, by area:
//
// Documents and their runs:
//   - file.go: File, its statuses, FileStore (the file records and listings).
//   - metadata_edit.go: MetadataEdit, the check of a person's edit of a
//     document's metadata and how it applies; ValidIBAN.
//   - blob.go: BlobStore, the content-addressed originals and processed files.
//   - intake.go: the supported types and what intake hands storage
//     (IngestRecord, UploadPolicy, Requeue).
//   - idempotency.go: the Idempotency-Key rule's key check, the kept
//     reply and IdempotencyStore.
//   - filename.go: CleanFilename, the one rule of a stored file name.
//   - pipeline.go: pipelines, their steps, routing rules and their matching
//     (RoutingRule.Matches, MatchRules).
//   - step.go: Step, the interface of a step type's logic, and the worker
//     statistics.
//   - runrecord.go: what the pipeline engine and its run store hand each
//     other (claims, step records, routing, recovery, heartbeats).
//   - message.go: OutboxMessage and OutboxRow, the outbox's records.
//   - event.go: the event names and Event, the record on the events topic.
//   - classification.go: the classification rules' types and their check.
//   - search.go, search_store.go: SearchIndex and its documents and
//     queries; saved searches, embeddings and similarity pairs.
//
// People:
//   - user.go: User (who makes a request), UserState (what a user id may do
//     now), profiles, local accounts, API tokens and sessions.
//   - account.go: a local account's input and patch with their checks,
//     AccountStore, PasswordHasher.
//   - people.go: subscription tiers, the audit log, sign-ups and user events.
//   - profile.go: ProfileStore, the administrators' view of profiles, users
//     search and mentionable users.
//   - sso.go: single sign-on's records and ResolveSSOSignIn, the rule of
//     which user a sign-in is; the mobile hand-off's one-time code.
//   - mail.go: Mail and the Mailer that sends it.
//
// Working together:
//   - access.go: FileAccess, the one rule of who may view, comment, edit,
//     delete, share and claim a file (the share roles and the unclaimed
//     files), and Visibility, the same rule as a query filter.
//   - share.go: Share, CheckShareTarget, ShareStore.
//   - comment.go: Comment, CheckCommentBody, ExtractMentions, CommentStore.
//   - mention.go: FileAccess.Mentions, whom a comment's mentions notify and
//     give access to.
//   - annotation.go: Annotation, CheckAnnotation, AnnotationStore.
//
// Events out:
//   - webhook.go: webhooks, subscribers and their kinds, deliveries and
//     their attempts, WebhookStore.
//   - automation.go: automation hooks, their flat payload and trigger
//     samples.
//   - device.go: the devices registered for push, CheckPushToken,
//     DeviceStore.
//   - mobile.go: the phone app's profile (MobileProfileOf, GravatarURL),
//     the language preference, the QR login's challenge.
//   - notification.go: the administrators' notifications and Notifier.
//   - delivery_batch.go: RecordedAttempt, an attempt recorded in a batch.
//
// Integrations:
//   - integration.go: Integration, its status and IntegrationTester.
//   - integration_types.go: the catalogue of types, each config and
//     credential key with its default and check, the endpoint keys and
//     CheckEndpointChange (moving an endpoint needs the credentials again).
//   - integration_check.go: CheckIntegration, the one check of an
//     integration's input.
//   - integration_quota.go: quotas by subscription tier, the tester registry.
//   - integration_alert.go: the notice of an integration failing too long.
//   - integration_metric.go: the metric of one integration operation and
//     its error classes.
//   - mail_source.go: what an IMAP source claims, reports and remembers.
//   - destination.go: DestinationClient, what every destination type
//     implements, and the classes of its failures.
//   - destination_delivery.go: a file's delivery to one destination, its
//     statuses and what the file's record shows of it.
//   - integration_tls.go: IntegrationTLS, the TLS of an integration that
//     speaks it (system roots, or its ca_certificate alone).
//   - destination_name.go: filename_template's placeholders and the
//     check of a name a destination stores.
//   - destination_tester.go: DestinationTester, the test of any
//     destination type through its client's probe.
//   - destination_delivery.go: a file's deliveries to destinations
//     (FileDestination, DeliveryTask, DeliveryOutcome), DestinationStore and
//     the filename_template's values of a file.
//   - integration_tls.go: IntegrationTLS, the TLS configuration of an
//     integration (config.ca_certificate or the system's roots).
//   - cloud_folders.go: CloudFolder, what the cloud folder browser lists.
//   - allowlist.go: the outbound allow-lists' entries (host or host:port).
//
// The database wizard:
//   - database_wizard.go: the backends, the connection URL's building and
//     parsing, LegacySource (the original service's database, read), and
//     MigrationJob, a copy or an import in the background with its
//     progress and the report of what it could not carry over.
//
// Settings:
//   - settings.go: SettingDef, Setting, SettingsStore and the validation
//     of values.
//   - settings_handles.go: Handle, how code reads a setting
//     (StepTimeout.Get(s)), its kinds, and Catalogue.
//   - settings_catalogue.go: every setting's handle, declared with its
//     entry: default, type, check, description, category.
//   - settings_check.go: the checks of values (numbers, durations, URLs…).
//   - settings_rules.go: rules across settings, checked at start.
//   - settings_values.go: the values some settings take (regions, EasyOCR
//     and embedding models for the settings API's suggestions), and what
//     AZURE_REGION and EASYOCR_LANGUAGES mean for OCR.
//
// Operations:
//   - reset.go: the system reset's modes, confirmations, result and
//     SystemResetter.
//
// Analytics:
//   - analytics.go: Metric, the one metric schema, and Recorder.
//   - analytics_query.go: an analytics window and its buckets.
//   - analytics_report.go: Analytics and the reports it answers.
//
// Errors and rates:
//   - errors.go: the error codes and Error, which transports map to their
//     statuses (http/errors.go for HTTP).
//   - rate.go: Rate, a "100/minute" rate, and ParseRate.
//
// TestDocIndexesEveryFile keeps this index, and every package doc.go's
// index of its files, complete.
package docflow
