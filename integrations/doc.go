// Package integrations holds the protocol clients of document sources,
// storage destinations and the administrators' channels, one folder each:
//
//   - imap: the IMAP source client (and imaptest, its test servers).
//   - local: the LOCAL destination's folder rule (inside
//     LOCAL_DESTINATION_DIR/<owner>/) and its tester.
//   - notify: the administrators' notification channels of
//     NOTIFICATION_URLS, in Apprise's URL syntax.
//   - smtp: docflow.Mailer over SMTP.
//
// Each follows one shape: a parsed config, Connect, the action (Test,
// Deliver or Poll) reporting per-item errors, and Close; a long-lived
// client is owned by one integration actor (actors.SpawnIntegration). Every
// connection to a host a user or operator configured goes through
// internal/netguard. The pipeline reaches destinations through the
// Destinations interface of actors/pipeline/steps.
package integrations
