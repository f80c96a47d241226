// Package integrations holds the protocol clients of document sources,
// storage destinations, events going out and the administrators' channels,
// one folder each:
//
//   - imap: the IMAP source client (and imaptest, its test servers).
//   - local, paperless, dropbox, googledrive, onedrive…: the destinations, each a
//     docflow.DestinationClient registered in internal/app's
//     DestinationFactories; desttest is the contract suite every one runs,
//     internal/httpdest what the HTTP-based ones share.
//   - webhook: the signed POST to webhook and automation hook receivers.
//   - expo: the Expo push service, for the mobile app's devices.
//   - notify: the administrators' notification channels of
//     NOTIFICATION_URLS, in Apprise's URL syntax.
//   - smtp: docflow.Mailer over SMTP.
//
// A long-lived client is owned by one integration actor
// (actors.SpawnIntegration), so calls never overlap. Every connection to a
// host a user or operator configured goes through internal/netguard.
package integrations
