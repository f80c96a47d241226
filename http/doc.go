// Package http is docflow's fasthttp front end: the router, the middleware
// and one file per resource. Handlers are func(*fasthttp.RequestCtx) error;
// one adapter turns errors and panics into {"detail": …} responses with the
// status errors.go gives each docflow error code. Handlers reach storage
// through the root package's interfaces (or one the file declares) and
// start work by writing rows and outbox messages; they never drive actors.
// Each route's handler is a method of its resource's handlers type
// (filesHandlers, integrationHandlers…), holding the resource's
// dependencies, never an anonymous closure: every handler has a name in
// stack traces and profiles.
//
// Every route is registered with its documentation (a Doc: summary,
// parameters, the request and response types, errors, examples), from
// which /openapi.json is generated; docs/api.md says how to write one.
//
// The server and what every request goes through:
//   - server.go: Config, NewServer, the routes (a trailing slash is not
//     significant) and the authentication levels: AuthUser, AuthAdmin,
//     AuthToken (a bearer token even in single-user mode).
//   - openapi.go, openapi_build.go, openapi_schema.go: Doc, the route's
//     documentation; the OpenAPI 3.1 document GET /openapi.json built from
//     the routes; the reflector of Go types into JSON Schema.
//   - middleware.go: request id, recover, the per-request timeout, the body
//     limit, authentication, the rate limit, the access log and the
//     request metric (the route is its pattern, or "other").
//   - errors.go: the one table of docflow error codes to HTTP statuses.
//   - json.go: strict JSON decoding (valid UTF-8, no trailing data).
//   - bodylimit.go: an oversized JSON body is drained, bounded, before its
//     413.
//   - conns.go, writeprogress.go: timeouts for slow clients, the upload
//     and download deadlines that move with progress, the minimum download
//     rate, connections per client address.
//   - ratelimit.go: the sliding-window rate limits, per user or address
//     (an IPv6 /64 is one address), shared by every api process through
//     Config.SharedLimits, in memory without it or while it fails.
//   - security.go: security headers, CORS for CORS_ALLOWED_ORIGINS, the
//     refusal of cross-site state-changing requests, NUL screening.
//   - rebind.go: single-user mode answers only requests addressed to its
//     own hosts (DNS rebinding).
//   - redirect.go: every redirect points into BASE_URL; safeNext, the one
//     check of a redirect target a request chose.
//
// Signing in:
//   - auth.go: bearer tokens (SHA-256, a short cache, batched last-use
//     writes) and session cookies, accepted only while Config.UserState
//     says their user may sign in; trusted proxies.
//   - authfail.go: failed sign-ins delay their user name per client
//     address; failed bearer tokens limited per address; failures audited.
//   - login.go: the sign-in page, sign-out, the mobile app's browser login.
//   - signin.go: what every sign-in ends with: the session and its cookie,
//     or the mobile hand-off (a one-time code exchanged at
//     POST /api/mobile/token, or a token in the redirect).
//   - oauth.go, oauth_claims.go, oauth_tokens.go: single sign-on with
//     OpenID Connect (code flow with PKCE), the claims and allow-lists,
//     the code exchange and the re-check of an SSO user.
//   - sso_admin.go: the administrators' links of local accounts to SSO
//     identities.
//   - selfservice.go, mailsend.go: password reset and user name reminder
//     (/api/auth/*, /forgot-password, /reset-password) and the bounded
//     background sender of their mail.
//   - tokens.go, admin_tokens.go: a user's API tokens; an administrator's
//     view of anyone's; tokens_doc.go, their documentation.
//   - local_users.go: the administrators' routes of local accounts.
//   - users.go: user profiles under /api/admin/users, users search and
//     mentionable users.
//   - audit.go: the audit helper and GET /api/admin/audit-log.
//   - signin_doc.go, admin_doc.go: the request and response types and the
//     documentation of the sign-in, self-service and administrators'
//     routes (users, local accounts, SSO links, the audit log, ownership).
//
// Documents:
//   - upload.go: uploads, process-url, processall and the automation upload.
//   - idempotency.go: the Idempotency-Key rule wrapped around the upload
//     and process-url handlers (a repeat replays the first answer).
//   - files.go: the files API (listing, detail, metadata) and
//     fileFor/visibleTo, the file access rule applied to the current user
//     (fileFor loads and authorizes the file of every
//     /api/files/{file_id}… route); files_content.go (preview, download, the bulk ZIP);
//     files_bulk.go (deletion, reprocessing, pipeline assignment, one or
//     in bulk); ownership.go (claims and assigned owners); files_audit.go
//     (their audit entries); files_metadata.go (a person's edit of the
//     metadata, with its document.updated event; files_metadata_doc.go,
//     its documentation); files_destinations.go (send-to: one document
//     queued for one of the user's destinations); files_doc.go (the
//     documentation of the files and upload routes, their answers' types).
//   - shares.go, comments.go, annotations.go: working together, each route
//     asking fileFor for the right it exercises; collab_doc.go, their
//     request and response types and documentation.
//   - search.go, similarity.go, saved_searches.go: search, similar
//     documents and pairs, saved searches; embeddings.go, the embedding
//     runs; search_doc.go, the documentation of these and of the queue.
//   - pipelines.go, routing.go, classification.go: pipelines and their
//     steps, routing rules, classification rules; pipelines_doc.go, their
//     documentation.
//   - queue.go: the queue's statistics.
//   - graphql.go, graphql_writes.go: POST /graphql (the executor, package
//     graphql, runs behind this server's middleware) and GraphiQL at GET
//     /graphql; GraphQLWrites, the mutations' writes by these routes'
//     code; graphql_doc.go, their documentation.
//
// Integrations and events out:
//   - integrations.go, integrations_audit.go: /api/integrations/…, an
//     endpoint moved without its credentials refused, every change and test
//     audited without credentials.
//   - webhooks.go: webhooks, their deliveries and redelivery;
//     checkTargetURL, the check of every outbound URL a user gives.
//   - integrations_doc.go: the documentation of integrations, webhooks and
//     automation hooks.
//   - automation.go: automation hooks (REST hooks for Zapier, Make, n8n).
//   - mobile.go: the devices registered for push notifications.
//   - mobile_app.go: the rest of the phone app's namespace: the token a
//     signed-in browser makes for it (generate-token), whoami, the
//     language preference.
//   - qr_login.go: QR login: the challenge, its status and QR code (SVG
//     drawn here), the phone's claim, and the page /qr-login
//     (static/qr-login.js follows the challenge); mobile_doc.go, the
//     documentation of these.
//   - cloud.go: the cloud folder browser (POST /api/<provider>/list-folders)
//     and the spec's send-to routes (POST /send_to_<provider>/), over the
//     CloudFolderLister and DeliveryQueue it declares.
//   - notify.go: the administrators' test notification.
//   - database.go: the database wizard (backends, build-url,
//     test-connection, preview-migration, migrate and its progress), over
//     the DatabaseWizard it declares; database_doc.go, their documentation.
//
// Pages and operations:
//   - app.go: the web application (web/app, built into static/app): the
//     page routes (/, /files/{id}, the admin pages) answer its page with
//     the signed-in user in a meta element; its hashed assets.
//   - compress.go: Brotli or gzip for embedded text files, each
//     compressed once.
//   - home.go: the status page /status, the API reference /docs (Swagger
//     UI over /openapi.json, or the route list without it), static files.
//   - health.go: the health checks (details for administrators only);
//     the liveness probe, answered ahead of the router and middleware.
//   - ops.go: the operations page /ops over /api/analytics/*.
//   - settings.go: the settings API (/api/settings/…: list, one key, set,
//     delete, bulk update, credentials overview, suggestions), sensitive
//     values never shown; settings_page.go, the /settings page over it
//     (static/settings.js saves only what changed); settings_doc.go, the
//     documentation of both and of the system reset.
//   - analytics.go: GET /api/analytics/*.
//   - system_reset.go: the system reset's status, full reset and reimport
//     (ENABLE_FACTORY_RESET, the typed confirmation, the audit entry).
//   - metrics.go, metricsserver.go: GET /metrics, and a worker's own
//     /metrics listener, which answers the liveness and readiness probes
//     too (LivePath, ReadyPath).
//   - profileserver.go: the loopback listener of Go's runtime profiles
//     (DEBUG_PPROF_ADDR).
//   - pages_doc.go, ops_doc.go: the documentation of the health checks, the
//     pages, analytics, metrics, notifications, cloud folders and mobile
//     devices.
package http
