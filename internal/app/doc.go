// Package app builds a docflow process: every dependency of the serve,
// api and worker roles, built once in Build and released by Close in
// reverse order. cmd/docflow is a thin layer over it; its test twin
// (apptest) builds the same graph on a throwaway database, an embedded
// broker, a scratch WORKDIR and a loopback port, with short timings, for
// the end-to-end tests, the tests of the whole API and the benchmarks.
//
// Which process does what: serve runs everything; api serves HTTP, runs
// the outbox relay and (with the embedded index, which one process only may
// open) the search indexer; worker runs the router, the step consumers, the
// relay, event delivery, the watch folders, the IMAP sources and the
// integration alerts.
//
// Build's order: logger, WORKDIR, session secret (or one generated and kept
// in WORKDIR/.session_secret), PostgreSQL (created if missing, migrated),
// settings (a value the service cannot use stops the start, naming it; the
// log is built again from them; then each process listens for changes to
// them, see postgres.SettingsStore.Start), the
// metrics recorder and the Prometheus series, the broker (embedded when
// KAFKA_BROKERS is empty), topics, producer, outbox relay, blob store,
// the shared rate limits, intake and watch folders, blob sweep, the actor engine, the steps and
// their registry, the pipeline engine and event delivery (serve, worker),
// the search index and indexer (serve, api), HTTP. Each part registers its
// closer as it is built; on SIGTERM, or when Build fails half-way, Close
// first closes the parts that take work in all at once (HTTP stops
// accepting and drains; the pipeline engine, event delivery, destinations,
// sources and the indexer finish, commit and leave their groups), then
// the rest newest first: the relay stops, the broker closes, the pool
// closes. The log names each part's time (info from a second).
//
// Its files:
//   - app.go: Build, Close and OpenStore (for the one-shot commands).
//   - config.go: the settings read from the environment before the
//     database opens.
//   - server.go: the HTTP server with every resource mounted.
//   - graphql.go: the GraphQL executor over the stores, mounted at
//     /graphql with the REST routes' writes.
//   - userstate.go: the one check of what a user id may do now (may it sign
//     in, is it an administrator), handed to the HTTP server and to the
//     delivery fan-out; local accounts' answers cached briefly.
//   - sso.go: single sign-on's wiring and an SSO user's state now
//     (re-checked with the provider after SSO_ADMIN_RECHECK).
//   - accounts.go: local accounts as the API gets them.
//   - notices.go, leftovers.go: what administrators should review (unsafe
//     settings; what single-user mode left), logged and shown on /.
//   - analytics.go: the metrics recorder (ClickHouse or PostgreSQL) and
//     its retention.
//   - metrics.go: a worker's /metrics listener (WORKER_METRICS_ADDR) and
//     any process's runtime profiles (DEBUG_PPROF_ADDR).
//   - search.go: the search index (Elasticsearch or Bleve).
//   - delivery.go: event delivery to webhooks, hooks, devices and the
//     administrators' channels.
//   - integrations.go: the registry of integration testers, by type.
//   - cloud.go: the cloud drives' HTTP clients and options from the
//     settings (their API URLs), for the destinations and the folder
//     browser.
//   - database.go: the database wizard of the process (its migrations
//     stop at Close and stay resumable).
//   - ratelimit.go: the rate limits every process shares in PostgreSQL
//     (the API's and the per-user upload window) and the sweep of their
//     expired windows.
//   - sweep.go: the blob sweep's schedule (one process at a time, under an
//     advisory lock).
//   - reset.go: the system reset (wipe, work files, reimport,
//     FACTORY_RESET_ON_STARTUP) and every process's reaction to one
//     announced on the control topic: its caches dropped. The control
//     listener starts last in Build; a serve or api process runs
//     FACTORY_RESET_ON_STARTUP's reset before it serves HTTP.
package app
