// Package integrations holds the protocol clients for document sources and
// storage destinations, one folder per integration (imap, webdav, s3, ftp,
// sftp, smtp, paperless, cloud drives). Each follows one shape: a parsed
// config struct, Connect, the action (Test, Deliver or Poll) reporting
// per-item errors, and Close. The pipeline reaches destinations through
// the Destinations interface of actors/pipeline/steps (today: the local
// folder of LOCAL_DESTINATION_DIR); the per-user integrations of the spec
// plug in there.
package integrations
