package app

import (
	"context"
	"fmt"
	"net"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/analytics"
	"docflow/analytics/prom"
	dfhttp "docflow/http"
	"docflow/processing/ocr"
	"docflow/storage/postgres"
	"docflow/streams"
)

// startHTTP builds the API and starts listening.
func (m *App) startHTTP(ctx context.Context, secret string) error {
	addr := docflow.ListenAddr.Get(m.Settings)
	if !docflow.AuthEnabled.Get(m.Settings) && !isLoopback(addr) {
		m.notice("AUTH_ENABLED is false and the server listens on " + addr + ", not a loopback address: anyone who reaches it has full access. Set AUTH_ENABLED=true, or LISTEN_ADDR to 127.0.0.1.")
	}
	if err := m.reviewSingleUserLeftovers(ctx); err != nil {
		return err
	}
	m.startAccounts()
	tokens := postgres.NewTokenStore(m.DB)
	// Tokens made without authentication by earlier versions had no owner;
	// they are the admin account's, like those made now.
	admin := docflow.AdminUserID(m.Settings)
	if n, err := tokens.AdoptOwnerlessTokens(ctx, admin); err != nil {
		return err
	} else if n > 0 {
		m.Log.Info().Int64("tokens", n).Str("owner", admin).Msg("API tokens without an owner now belong to the admin account")
	}
	sessions := postgres.NewSessionStore(m.DB)
	sso := m.sso.store
	hcfg := dfhttp.Config{
		Log:           m.Log.With().Str("component", "http").Logger(),
		Settings:      m.Settings,
		Tokens:        tokens,
		Sessions:      sessions,
		Recorder:      m.Recorder,
		Version:       m.cfg.Version,
		SessionSecret: secret,
		// A changed local password (or a deactivated account) ends its sessions.
		LocalPasswordStamp: sessions.LocalPasswordStamp,
		Audit:              postgres.NewAuditLog(m.DB),
		LocalLogin:         m.localLogin,
		LoginOwner:         m.loginOwner,
		// Who may sign in and who is an administrator, read when used.
		UserState:    m.users.state,
		Now:          m.cfg.Now,
		AdminNotices: m.adminNotices,
		SharedLimits: m.limits,
	}
	if m.cfg.HTTP != nil {
		m.cfg.HTTP(&hcfg)
	}
	srv := dfhttp.NewServer(hcfg)
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "database", Critical: true, Check: m.DB.Ping})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "queue", Check: m.pingKafka})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "search", Check: m.Index.Ping})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "analytics", Check: m.Recorder.Ping})
	m.mountResources(srv)
	m.mountSSO(srv, sso)
	m.HTTP = srv
	ln := m.cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen on %s: %w (is another docflow running? set LISTEN_ADDR)", addr, err)
		}
	}
	m.listener = ln
	m.serveErr = make(chan error, 1)
	go func() { m.serveErr <- srv.Serve(ln) }()
	m.onDrain("HTTP server", func(ctx context.Context) error { return srv.Shutdown(ctx) })
	m.Log.Info().Str("url", srv.BaseURL()).Str("listen", ln.Addr().String()).Msg("docflow is ready")
	return nil
}

// mountResources mounts the resource routes on srv.
func (m *App) mountResources(srv *dfhttp.Server) {
	srv.MountUploads(dfhttp.UploadDeps{Intake: m.Intake, Idempotency: postgres.NewIdempotencyStore(m.DB)})
	pipelines := postgres.NewPipelineStore(m.DB)
	srv.MountFiles(dfhttp.FilesDeps{Files: m.Files, Blobs: m.Blobs, Intake: m.Intake, Pipelines: pipelines,
		Destinations: m.DestinationStore, Edits: m.Files, Announce: streams.DocumentUpdated})
	srv.MountOwnership(dfhttp.OwnershipDeps{Files: m.Files})
	srv.MountCollab(dfhttp.CollabDeps{Files: m.Files, Shares: postgres.NewShareStore(m.DB),
		Comments: postgres.NewCommentStore(m.DB), Annotations: postgres.NewAnnotationStore(m.DB)})
	srv.MountPipelines(dfhttp.PipelinesDeps{Pipelines: pipelines})
	srv.MountRouting(dfhttp.RoutingDeps{Rules: postgres.NewRoutingStore(m.DB), Pipelines: pipelines})
	inspector := pipeline.NewInspector(m.Brokers, m.Runs, docflow.StandardSteps)
	srv.MountQueue(dfhttp.QueueDeps{Queue: inspector})
	m.Prom.MustRegister(prom.LagCollector(inspector.Lags))
	srv.MountClassification(dfhttp.ClassificationDeps{Rules: postgres.NewClassificationStore(m.DB)})
	srv.MountWebhooks(dfhttp.WebhooksDeps{Webhooks: m.Webhooks})
	srv.MountNotifications(dfhttp.NotificationsDeps{Notifier: m.Notifier})
	srv.MountSystemReset(dfhttp.SystemResetDeps{Resetter: m.reset})
	srv.MountMobile(dfhttp.MobileDeps{Devices: m.Devices})
	srv.MountMobileApp(dfhttp.MobileAppDeps{Profiles: postgres.NewProfileStore(m.DB, streams.EncodeEvent), QR: postgres.NewQRChallengeStore(m.DB)})
	srv.MountAutomation(dfhttp.AutomationDeps{Hooks: postgres.NewAutomationHookStore(m.DB, m.cipher)})
	srv.MountEmbeddings(dfhttp.EmbeddingsDeps{Files: m.Files, Queue: m.Embeddings})
	srv.MountSearch(dfhttp.SearchDeps{Index: m.Index, Store: m.SearchStore, Files: m.Files})
	srv.MountLocalUsers(dfhttp.LocalUsersDeps{Accounts: accountStore{m.Accounts, m.users}, Mailer: m.Notifier.Mailer})
	srv.MountAnalytics(dfhttp.AnalyticsDeps{Reports: m.Reports, RecorderStats: m.RecorderStats})
	srv.MountMetrics(dfhttp.MetricsDeps{Gatherer: m.Prom.Registry()})
	srv.MountUsers(dfhttp.UsersDeps{Profiles: postgres.NewProfileStore(m.DB, streams.EncodeEvent)})
	srv.MountIntegrations(dfhttp.IntegrationsDeps{Store: m.integrationStore(), Testers: m.IntegrationTesters()})
	srv.MountCloud(dfhttp.CloudDeps{Folders: m.cloudFolders(), Files: m.Files, Integrations: m.integrationStore(), Deliveries: m.DestinationStore})
	srv.MountDatabase(dfhttp.DatabaseDeps{Wizard: m.databaseWizard()})
	if err := m.mountGraphQL(srv, pipelines); err != nil {
		// The schema and the resolvers are built together: a mismatch is
		// a bug no configuration causes.
		panic(err)
	}
	srv.MountSettings(dfhttp.SettingsDeps{Store: m.Settings, Suggest: map[string]dfhttp.Suggester{
		docflow.TesseractLanguage.Key(): ocr.New(ocr.Options{}).Languages}})
}

// startPrometheus puts the Prometheus series beside the analytics store:
// every metric recorded also updates them (even with ANALYTICS_ENABLED
// off), and the recorder's buffer is exported so that an outage of the
// store shows on /metrics.
func (m *App) startPrometheus() {
	m.Prom = prom.New()
	if stats := m.RecorderStats; stats != nil {
		m.Prom.MustRegister(
			prom.CounterFunc("analytics_dropped_total", "Metrics the analytics buffer dropped (full buffer, or unwritten at close).",
				func() float64 { return float64(stats().Dropped) }),
			prom.CounterFunc("analytics_write_errors_total", "Failed writes of metric batches to the analytics store.",
				func() float64 { return float64(stats().WriteErrors) }),
			prom.GaugeFunc("analytics_buffered", "Metrics waiting in the analytics buffer.",
				func() float64 { return float64(stats().Buffered) }))
	}
	// The store's Close stays registered by startRecorder; Multi only fans
	// out.
	m.Recorder = analytics.Multi{m.Recorder, m.Prom}
}
