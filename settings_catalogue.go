package docflow

// Setting categories, in the order the settings page shows them.
var SettingCategories = []string{
	"Core", "Authentication", "Uploads", "Processing", "OCR", "AI", "Search",
	"Storage", "Notifications", "Rate limiting", "Mobile", "Advanced",
}

// OCRLanguages are the Tesseract codes offered by the ocr step's config.
var OCRLanguages = []string{
	"ara", "chi_sim", "chi_tra", "ces", "dan", "nld", "eng", "fin", "fra", "deu",
	"ell", "heb", "hin", "hun", "ita", "jpn", "kor", "nor", "pol", "por", "ron",
	"rus", "spa", "swe", "tha", "tur", "ukr", "vie",
}

// The settings docflow reads, one handle each (see Handle), in the order
// the settings page lists them: each entry's Description says what the
// setting does. Catalogue lists the entries.
var (
	// Core
	ListenAddr              = stringSetting(SettingDef{Key: "LISTEN_ADDR", Category: "Core", RestartRequired: true, Default: "127.0.0.1:8000", Description: "Address the HTTP server listens on", Check: HostPort()})
	HTTPReadHeaderTimeout   = secondsSetting(SettingDef{Key: "HTTP_READ_HEADER_TIMEOUT", Category: "Core", RestartRequired: true, Default: "20", Description: "Seconds a client has to send a request's headers, from the connection's opening (or the request's first byte on a kept-alive connection); headers sent slowly do not extend it", Check: IntBetween(1, 3600)})
	HTTPBodyTimeout         = secondsSetting(SettingDef{Key: "HTTP_BODY_TIMEOUT", Category: "Core", RestartRequired: true, Default: "60", Description: "Seconds a request body may take (a JSON body in all; an upload's body between two arrivals of data, so a large file on a slow line is not cut off)", Check: IntBetween(1, 86400)})
	HTTPWriteTimeout        = secondsSetting(SettingDef{Key: "HTTP_WRITE_TIMEOUT", Category: "Core", RestartRequired: true, Default: "60", Description: "Seconds a client may take to read a response (a whole answer; a download between two of its writes, so a large file on a slow line is not cut off while it keeps HTTP_MIN_WRITE_RATE)", Check: IntBetween(1, 86400)})
	HTTPMinWriteRate        = int64Setting(SettingDef{Key: "HTTP_MIN_WRITE_RATE", Category: "Core", RestartRequired: true, Default: "1024", Description: "Bytes a second a client must take a download or a bulk ZIP at, averaged over HTTP_MIN_WRITE_RATE_WINDOW; a slower one is cut off (0 = no minimum)", Check: AtLeast(0)})
	HTTPMinWriteRateWindow  = secondsSetting(SettingDef{Key: "HTTP_MIN_WRITE_RATE_WINDOW", Category: "Core", RestartRequired: true, Default: "60", Description: "Seconds over which HTTP_MIN_WRITE_RATE is averaged: a download is cut off at the end of a window in which its client took less", Check: IntBetween(1, 86400)})
	HTTPIdleTimeout         = secondsSetting(SettingDef{Key: "HTTP_IDLE_TIMEOUT", Category: "Core", RestartRequired: true, Default: "60", Description: "Seconds a kept-alive connection may wait for its next request", Check: IntBetween(1, 86400)})
	HTTPMaxConnsPerIP       = intSetting(SettingDef{Key: "HTTP_MAX_CONNS_PER_IP", Category: "Core", RestartRequired: true, Default: "128", Description: "Connections open at once from one client address (an IPv6 /64 counts as one); more are answered 429 and closed; TRUSTED_PROXIES are not capped; 0 = no cap", Check: AtLeast(0)})
	BaseURL                 = stringSetting(SettingDef{Key: "BASE_URL", Category: "Core", RestartRequired: true, Description: "Public URL of the service (default http:// + LISTEN_ADDR)", Check: URLs("http", "https")})
	DatabaseURL             = stringSetting(SettingDef{Key: "DATABASE_URL", Category: "Core", RestartRequired: true, Default: "postgres://postgres@127.0.0.1:5432/docflow?sslmode=disable", Description: "PostgreSQL connection URL; the database is created if missing", Sensitive: true, Check: PostgresURL()})
	Workdir                 = stringSetting(SettingDef{Key: "WORKDIR", Category: "Core", RestartRequired: true, Default: "./data", Description: "Data directory: blobs, embedded broker and search index", Check: NotEmpty()})
	KafkaBrokers            = listSetting(SettingDef{Key: "KAFKA_BROKERS", Category: "Core", RestartRequired: true, Description: "Kafka bootstrap brokers; empty starts the embedded broker in-process", Check: HostPortList()})
	KafkaPartitions         = intSetting(SettingDef{Key: "KAFKA_PARTITIONS", Category: "Core", RestartRequired: true, Default: "12", Description: "Partitions of each topic created by docflow", Check: IntBetween(1, 10000)})
	ElasticsearchURL        = stringSetting(SettingDef{Key: "ELASTICSEARCH_URL", Category: "Search", RestartRequired: true, Description: "Elasticsearch URL; empty uses the embedded Bleve index", Check: URLList("http", "https")})
	ElasticsearchAPIKey     = stringSetting(SettingDef{Key: "ELASTICSEARCH_API_KEY", Category: "Search", RestartRequired: true, Sensitive: true, Description: "Elasticsearch API key"})
	ClickHouseURL           = stringSetting(SettingDef{Key: "CLICKHOUSE_URL", Category: "Core", RestartRequired: true, Description: "ClickHouse URL (clickhouse://host:9000/db); empty records metrics in PostgreSQL", Check: URLs("clickhouse", "tcp", "http", "https")})
	ClickHouseUser          = stringSetting(SettingDef{Key: "CLICKHOUSE_USER", Category: "Core", RestartRequired: true, Description: "ClickHouse user for recording and reports; overrides a user in CLICKHOUSE_URL (empty = the URL's, else default)"})
	ClickHousePassword      = stringSetting(SettingDef{Key: "CLICKHOUSE_PASSWORD", Category: "Core", RestartRequired: true, Sensitive: true, Description: "ClickHouse password for recording and reports; overrides a password in CLICKHOUSE_URL, and keeps it out of the URL"})
	WorkerMetricsAddr       = stringSetting(SettingDef{Key: "WORKER_METRICS_ADDR", Category: "Core", RestartRequired: true, Description: "Address a worker serves Prometheus GET /metrics and its liveness and readiness probes on (it has no HTTP server otherwise), for example 0.0.0.0:9100; METRICS_TOKEN, when set, is required of the scraper, and must be set for an address beyond loopback (the worker refuses to start otherwise); empty = none", Check: OptionalHostPort()})
	AnalyticsEnabled        = boolSetting(SettingDef{Key: "ANALYTICS_ENABLED", Category: "Core", RestartRequired: true, Default: "true", Description: "Record processing, intake and request metrics for the analytics API"})
	AnalyticsRetentionDays  = intSetting(SettingDef{Key: "ANALYTICS_RETENTION_DAYS", Category: "Core", RestartRequired: true, Default: "90", Description: "Days of metrics kept (older days are dropped)", Check: IntBetween(1, 3650)})
	AnalyticsBufferRows     = intSetting(SettingDef{Key: "ANALYTICS_BUFFER_ROWS", Category: "Core", RestartRequired: true, Default: "100000", Description: "Metrics held in memory while the analytics store is unreachable; beyond it new metrics are dropped and counted", Check: IntBetween(1000, 10000000)})
	AnalyticsSampleInterval = secondsSetting(SettingDef{Key: "ANALYTICS_SAMPLE_SECONDS", Category: "Core", RestartRequired: true, Default: "5", Description: "Seconds between consumer-lag and process-resource samples", Check: IntBetween(1, 3600)})
	LogLevel                = stringSetting(SettingDef{Key: "LOG_LEVEL", Category: "Core", RestartRequired: true, Type: TypeDropdown, Default: "info", Options: []string{"debug", "info", "warn", "error"}, Description: "Log level"})
	LogFormat               = stringSetting(SettingDef{Key: "LOG_FORMAT", Category: "Core", RestartRequired: true, Type: TypeDropdown, Default: "console", Options: []string{"console", "json"}, Description: "Log format"})
	Debug                   = boolSetting(SettingDef{Key: "DEBUG", Category: "Advanced", RestartRequired: true, Default: "false", Description: "Debug mode: log at the debug level whatever LOG_LEVEL says (every request, every setting change heard)"})

	// Authentication
	AuthEnabled              = boolSetting(SettingDef{Key: "AUTH_ENABLED", Category: "Authentication", RestartRequired: true, Default: "false", Description: "Require a session or API token (false = single-user mode)"})
	MultiUserEnabled         = boolSetting(SettingDef{Key: "MULTI_USER_ENABLED", Category: "Authentication", RestartRequired: true, Default: "false", Description: "Per-user ownership of documents"})
	UnclaimedFilesVisible    = boolSetting(SettingDef{Key: "UNCLAIMED_FILES_VISIBLE", Category: "Authentication", Default: "false", Description: "In multi-user mode, let every signed-in user see, find and claim the files without an owner (uploaded in single-user mode, from a watch folder or processall); false = administrators only"})
	SessionSecret            = stringSetting(SettingDef{Key: "SESSION_SECRET", Category: "Authentication", RestartRequired: true, Sensitive: true, Description: "Secret for session signing and settings encryption (at least 32 characters)", Check: MinLength(32)})
	SessionCookieSecure      = boolSetting(SettingDef{Key: "SESSION_COOKIE_SECURE", Category: "Authentication", RestartRequired: true, Description: "Mark the session cookie Secure (default: true unless BASE_URL is http)"})
	SessionLifetimeDays      = intSetting(SettingDef{Key: "SESSION_LIFETIME_DAYS", Category: "Authentication", RestartRequired: true, Default: "30", Description: "Session lifetime in days", Check: IntBetween(1, 3650)})
	AdminUsername            = stringSetting(SettingDef{Key: "ADMIN_USERNAME", Category: "Authentication", RestartRequired: true, Default: "admin", Description: "Local admin user name"})
	AdminPassword            = stringSetting(SettingDef{Key: "ADMIN_PASSWORD", Category: "Authentication", RestartRequired: true, Sensitive: true, Description: "Local admin password (empty disables the local admin login); at least 12 characters while AUTH_ENABLED is true"})
	AdminGroupName           = stringSetting(SettingDef{Key: "ADMIN_GROUP_NAME", Category: "Authentication", RestartRequired: true, Default: "admin", Description: "SSO group whose members are administrators, matched exactly (\"Admins\" or \"/admin\" are other groups); empty = no SSO administrators. Set it to a group only the provider's administrators control"})
	OIDCIssuer               = stringSetting(SettingDef{Key: "OIDC_ISSUER", Category: "Authentication", RestartRequired: true, Description: "OpenID Connect issuer URL (SSO)", Check: URLs("https", "http")})
	OIDCClientID             = stringSetting(SettingDef{Key: "OIDC_CLIENT_ID", Category: "Authentication", RestartRequired: true, Description: "OpenID Connect client id"})
	OIDCClientSecret         = stringSetting(SettingDef{Key: "OIDC_CLIENT_SECRET", Category: "Authentication", RestartRequired: true, Sensitive: true, Description: "OpenID Connect client secret"})
	OIDCScopes               = listSetting(SettingDef{Key: "OIDC_SCOPES", Category: "Authentication", Default: "openid,email,profile", Description: "Scopes asked of the OpenID Connect provider (add groups for providers that send the groups claim only when asked, and offline_access for a refresh token, with which SSO administrators are checked again without signing in)", Check: ScopeList()})
	OIDCAllowedDomains       = listSetting(SettingDef{Key: "OIDC_ALLOWED_DOMAINS", Category: "Authentication", Description: "Only SSO users whose verified e-mail address is in one of these domains may sign in (exact domains: list a subdomain on its own); empty = any", Check: HostList()})
	OIDCAllowedGroups        = listSetting(SettingDef{Key: "OIDC_ALLOWED_GROUPS", Category: "Authentication", Description: "Only SSO users in one of these provider groups (the groups claim, matched exactly) may sign in; with OIDC_ALLOWED_DOMAINS too, both must hold; empty = any"})
	OIDCTrustUnverifiedEmail = boolSetting(SettingDef{Key: "OIDC_TRUST_UNVERIFIED_EMAIL", Category: "Authentication", Default: "false", Description: "Take the e-mail address of an SSO user as verified when the provider sends no email_verified claim (for a provider that never sends it); an explicit false is never taken"})
	SSOAdminRecheck          = durationSetting(SettingDef{Key: "SSO_ADMIN_RECHECK", Category: "Authentication", Default: "15m", Description: "How long an SSO user's admin status holds after the provider last vouched for it (a sign-in, or a check with the refresh token); after it the provider is asked again, and a user it cannot be asked about is no administrator until it signs in again (90s, 15m, 1h)", Check: Duration()})
	AllowedHosts             = listSetting(SettingDef{Key: "ALLOWED_HOSTS", Category: "Authentication", Description: "In single-user mode (AUTH_ENABLED false), host names besides localhost, IP addresses and BASE_URL's host that requests may be addressed to (a guard against DNS rebinding); others are refused with 403"})
	CORSAllowedOrigins       = listSetting(SettingDef{Key: "CORS_ALLOWED_ORIGINS", Category: "Authentication", Description: "Other sites (origins such as https://app.example.com) whose pages may send state-changing requests and read answers (CORS); any other site's is refused with 403", Check: URLList("http", "https")})
	LoginFailuresBeforeDelay = intSetting(SettingDef{Key: "LOGIN_FAILURES_BEFORE_DELAY", Category: "Authentication", Default: "5", Description: "Failed sign-ins in a row for one user name from one client address (an IPv6 /64 counts as one) before each further attempt for that name from that address must wait a delay that doubles with every failure (1 s, 2 s, 4 s …); the name from other addresses is not delayed", Check: AtLeast(1)})
	LoginMaxDelay            = secondsSetting(SettingDef{Key: "LOGIN_MAX_DELAY", Category: "Authentication", Default: "900", Description: "Longest wait, in seconds, between sign-in attempts for a user name from an address with failed sign-ins", Check: AtLeast(1)})
	TokenFailureLimit        = stringSetting(SettingDef{Key: "TOKEN_FAILURE_LIMIT", Category: "Authentication", Default: "20/minute", Description: "Failed bearer tokens (unknown, revoked, expired) one client address (an IPv6 /64 counts as one) may send; past it the address gets 429 before its tokens are looked up", Check: RateLimit()})
	MetricsToken             = stringSetting(SettingDef{Key: "METRICS_TOKEN", Category: "Authentication", Sensitive: true, Description: "Bearer token a Prometheus scraper sends to GET /metrics (at least 24 characters); empty = /metrics asks for an administrator like the admin API", Check: MinLength(24)})
	PasswordHashConcurrency  = intSetting(SettingDef{Key: "PASSWORD_HASH_CONCURRENCY", Category: "Authentication", RestartRequired: true, Default: "0", Description: "Password hashes and verifications (sign-ins, resets, account changes; about 40 ms of CPU and 19 MiB each) run at once; 0 = the number of cores", Check: AtLeast(0)})
	PasswordHashQueue        = intSetting(SettingDef{Key: "PASSWORD_HASH_QUEUE", Category: "Authentication", RestartRequired: true, Default: "32", Description: "Password hashes and verifications that may wait for a turn beyond those running; one more is refused with 429 and Retry-After (a sign-in under a flood fails fast instead of piling up)", Check: AtLeast(0)})
	TrustedProxies           = listSetting(SettingDef{Key: "TRUSTED_PROXIES", Category: "Authentication", RestartRequired: true, Description: "Proxy addresses or CIDRs whose X-Forwarded-For is honoured", Check: AddressList()})

	// Uploads
	MaxUploadSize               = int64Setting(SettingDef{Key: "MAX_UPLOAD_SIZE", Category: "Uploads", Default: "1073741824", Description: "Largest accepted upload in bytes", Check: AtLeast(1)})
	MaxRequestBodySize          = int64Setting(SettingDef{Key: "MAX_REQUEST_BODY_SIZE", Category: "Uploads", Default: "1048576", Description: "Largest accepted JSON body in bytes", Check: AtLeast(1024)})
	EnableDeduplication         = boolSetting(SettingDef{Key: "ENABLE_DEDUPLICATION", Category: "Uploads", Default: "true", Description: "Detect exact duplicates by SHA-256"})
	AllowFileDelete             = boolSetting(SettingDef{Key: "ALLOW_FILE_DELETE", Category: "Uploads", Default: "true", Description: "Allow deleting files through the API"})
	UploadRateLimitPerUser      = intSetting(SettingDef{Key: "UPLOAD_RATE_LIMIT_PER_USER", Category: "Uploads", Default: "20", Description: "Uploads per signed-in user per window (ui-upload, process-url), reduced under load; the single user without authentication gets RATE_LIMIT_UPLOAD instead", Check: AtLeast(0)})
	UploadRateLimitWindow       = intSetting(SettingDef{Key: "UPLOAD_RATE_LIMIT_WINDOW", Category: "Uploads", Default: "60", Description: "Per-user upload window in seconds", Check: AtLeast(1)})
	DefaultDailyUploadLimit     = intSetting(SettingDef{Key: "DEFAULT_DAILY_UPLOAD_LIMIT", Category: "Uploads", Default: "0", Description: "Daily uploads per user when the profile sets none (0 = unlimited)", Check: AtLeast(0)})
	URLFetchTimeout             = secondsSetting(SettingDef{Key: "URL_FETCH_TIMEOUT", Category: "Uploads", Default: "30", Description: "Total timeout in seconds for process-url downloads", Check: AtLeast(1)})
	URLFetchAllowedHosts        = listSetting(SettingDef{Key: "URL_FETCH_ALLOWED_HOSTS", Category: "Uploads", Description: "Hosts process-url may fetch even when they resolve to private addresses: host (every port) or host:port (that port only; IPv6 as [addr]:port)", Check: AllowList()})
	ProcessallDir               = stringSetting(SettingDef{Key: "PROCESSALL_DIR", Category: "Uploads", Description: "Folder processall reads PDFs from (default WORKDIR/processall)"})
	ProcessallThrottleThreshold = intSetting(SettingDef{Key: "PROCESSALL_THROTTLE_THRESHOLD", Category: "Uploads", Default: "20", Description: "File count above which processall staggers tasks", Check: AtLeast(0)})
	ProcessallThrottleDelay     = secondsSetting(SettingDef{Key: "PROCESSALL_THROTTLE_DELAY", Category: "Uploads", Default: "3", Description: "Seconds of delay per task index when throttled", Check: AtLeast(0)})
	WatchFolders                = listSetting(SettingDef{Key: "WATCH_FOLDERS", Category: "Uploads", Description: "Folders polled for new files"})
	WatchFolderInterval         = secondsSetting(SettingDef{Key: "WATCH_FOLDER_INTERVAL", Category: "Uploads", Default: "10", Description: "Watch folder poll interval in seconds", Check: AtLeast(1)})

	// Processing
	StepTimeout             = secondsSetting(SettingDef{Key: "STEP_TIMEOUT", Category: "Processing", RestartRequired: true, Default: "600", Description: "Seconds one step attempt may run", Check: AtLeast(1)})
	StepRetryDelays         = durationsSetting(SettingDef{Key: "STEP_RETRY_DELAYS", Category: "Processing", RestartRequired: true, Default: "60s,300s,900s", Description: "Retry delays of a failed step (jitter ±20 %)", Check: Durations()})
	StepPoolSizes           = stringSetting(SettingDef{Key: "STEP_POOL_SIZES", Category: "Processing", RestartRequired: true, Description: "Actors per step type, e.g. ocr=2,convert_to_pdf=2 (OCR defaults to the core count)", Check: PoolSizes()})
	EnableTestStep          = boolSetting(SettingDef{Key: "ENABLE_TEST_STEP", Category: "Advanced", RestartRequired: true, Default: "false", Description: "Register the pipeline's test step type (fault drills, multi-process tests, benchmarks)"})
	StalledRunTimeout       = secondsSetting(SettingDef{Key: "STALLED_RUN_TIMEOUT", Category: "Processing", RestartRequired: true, Default: "3600", Description: "Seconds after which a run with no progress is failed", Check: AtLeast(1)})
	BlobSync                = stringSetting(SettingDef{Key: "BLOB_SYNC", Category: "Storage", RestartRequired: true, Type: TypeDropdown, Default: "group", Options: []string{"group", "file"}, Description: "How a stored file is made durable: group (one filesystem flush shared by concurrent writes; give WORKDIR/blobs its own filesystem if other programs write a lot beside it) or file (an fsync per file and directory)"})
	BlobSweepInterval       = secondsSetting(SettingDef{Key: "BLOB_SWEEP_INTERVAL", Category: "Storage", RestartRequired: true, Default: "21600", Description: "Seconds between sweeps that remove stored files no record references (0 = never); the first runs a few minutes after start, one process sweeps at a time", Check: AtLeast(0)})
	BlobSweepMinAge         = secondsSetting(SettingDef{Key: "BLOB_SWEEP_MIN_AGE", Category: "Storage", Default: "86400", Description: "Seconds since a stored file was last stored (or stored again) before a sweep may remove it; at least twice STEP_TIMEOUT (a lower value is raised to that)", Check: AtLeast(0)})
	LocalDestinationDir     = stringSetting(SettingDef{Key: "LOCAL_DESTINATION_DIR", Category: "Storage", Description: "Folder the send_to_destinations step copies processed files to; a user's LOCAL integration names a folder inside its subfolder <owner>/"})
	DestinationRetryDelays  = durationsSetting(SettingDef{Key: "DESTINATION_RETRY_DELAYS", Category: "Storage", RestartRequired: true, Default: "30,120,600,1800,3600", Description: "Waits in seconds before the retries of a failed delivery to a storage destination (jitter ±20 %); after the last the delivery fails, and send-to asks again", Check: Durations()})
	DestinationTimeout      = secondsSetting(SettingDef{Key: "DESTINATION_TIMEOUT", Category: "Storage", Default: "3600", Description: "Seconds one delivery to a storage destination may take, its upload included", Check: AtLeast(1)})
	IntegrationAllowedHosts = listSetting(SettingDef{Key: "INTEGRATION_ALLOWED_HOSTS", Category: "Storage", Description: "Hosts integrations (IMAP sources, destinations, their tests) may connect to even when they resolve to private or loopback addresses (intranet servers, tests): host (every port) or host:port (that port only; IPv6 as [addr]:port)", Check: AllowList()})
	LibreOfficeTimeout      = secondsSetting(SettingDef{Key: "LIBREOFFICE_TIMEOUT", Category: "Processing", Default: "120", Description: "Seconds a LibreOffice conversion may take", Check: AtLeast(1)})
	ConvertConcurrency      = intSetting(SettingDef{Key: "CONVERT_CONCURRENCY", Category: "Processing", Default: "2", Description: "Concurrent LibreOffice conversions", Check: AtLeast(1)})
	ToolMemoryLimit         = int64Setting(SettingDef{Key: "TOOL_MEMORY_LIMIT", Category: "Processing", Default: "1073741824", Description: "Address space in bytes each process of an external tool (LibreOffice, Tesseract, poppler, img2pdf) may use; a document that needs more fails, and OCR pages are bounded to a sixteenth of it in pixels (0 = no limit; LibreOffice needs about 512 MiB)", Check: ZeroOrAtLeast(512 << 20)})

	// OCR
	TesseractLanguage                 = stringSetting(SettingDef{Key: "TESSERACT_LANGUAGE", Category: "OCR", Type: TypeAutocomp, Default: "eng+deu", Description: "Tesseract languages used when a step says auto", Check: LanguageCodes()})
	OCRRenderer                       = stringSetting(SettingDef{Key: "OCR_RENDERER", Category: "OCR", Type: TypeDropdown, Default: "tesseract", Options: []string{"tesseract", "ocrmypdf", "auto"}, Description: "How the searchable PDF is made: Tesseract's pages (parallel per page), OCRmyPDF, or auto (OCRmyPDF when installed)"})
	TextQualityThreshold              = floatSetting(SettingDef{Key: "TEXT_QUALITY_THRESHOLD", Category: "OCR", Type: TypeSlider, Default: "85", Description: "OCR quality score below which text counts as poor", Check: FloatBetween(0, 100)})
	AzureDocumentIntelligenceEndpoint = stringSetting(SettingDef{Key: "AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT", Category: "OCR", Description: "Azure Document Intelligence endpoint for cloud OCR", Check: URLs("https", "http")})
	AzureDocumentIntelligenceKey      = stringSetting(SettingDef{Key: "AZURE_DOCUMENT_INTELLIGENCE_KEY", Category: "OCR", Sensitive: true, Description: "Azure Document Intelligence key"})
	AzureRegion                       = stringSetting(SettingDef{Key: "AZURE_REGION", Category: "OCR", Type: TypeAutocomp, Description: "Azure region of the Document Intelligence resource (westeurope): when AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT is empty, cloud OCR uses the regional endpoint https://<region>.api.cognitive.microsoft.com", Check: RegionName()})
	AWSRegion                         = stringSetting(SettingDef{Key: "AWS_REGION", Category: "Storage", Type: TypeAutocomp, Default: "us-east-1", Description: "AWS region of the S3 destinations whose integration names none", Check: RegionName()})
	EasyOCRLanguages                  = listSetting(SettingDef{Key: "EASYOCR_LANGUAGES", Category: "OCR", Type: TypeMulti, Description: "Languages of the original service's EasyOCR engine (en, de, ch_sim): docflow has no EasyOCR engine, so these are added, as Tesseract languages (en is eng), to TESSERACT_LANGUAGE where a step says auto; a code Tesseract has no language for has no effect"})

	// AI
	MetadataProvider        = stringSetting(SettingDef{Key: "METADATA_PROVIDER", Category: "AI", Type: TypeDropdown, Default: "rules", Options: []string{"rules", "openai"}, Description: "Metadata extraction provider"})
	OpenAIBaseURL           = stringSetting(SettingDef{Key: "OPENAI_BASE_URL", Category: "AI", Default: "https://api.openai.com/v1", Description: "OpenAI-compatible API base URL", Check: URLs("https", "http")})
	OpenAIAPIKey            = stringSetting(SettingDef{Key: "OPENAI_API_KEY", Category: "AI", Sensitive: true, Description: "API key for the OpenAI-compatible endpoint"})
	OpenAIModel             = stringSetting(SettingDef{Key: "OPENAI_MODEL", Category: "AI", Type: TypeModelPicker, Default: "gpt-4o-mini", Description: "Chat model for metadata extraction"})
	EmbeddingProvider       = stringSetting(SettingDef{Key: "EMBEDDING_PROVIDER", Category: "AI", Type: TypeDropdown, Default: "hashing", Options: []string{"hashing", "openai"}, Description: "Embedding provider"})
	EmbeddingModel          = stringSetting(SettingDef{Key: "EMBEDDING_MODEL", Category: "AI", Type: TypeModelPicker, Default: "text-embedding-3-small", Description: "Embedding model (openai provider)"})
	EmbeddingDimensions     = intSetting(SettingDef{Key: "EMBEDDING_DIMENSIONS", Category: "AI", Default: "384", Description: "Embedding dimensions", Check: IntBetween(1, 4096)})
	EmbeddingMaxTokens      = intSetting(SettingDef{Key: "EMBEDDING_MAX_TOKENS", Category: "AI", Default: "8000", Description: "Tokens of text fed to the embedding", Check: AtLeast(1)})
	EmbeddingBaseURL        = stringSetting(SettingDef{Key: "EMBEDDING_BASE_URL", Category: "AI", Description: "OpenAI-compatible embeddings API base URL (empty: OPENAI_BASE_URL)", Check: URLs("https", "http")})
	EmbeddingAPIKey         = stringSetting(SettingDef{Key: "EMBEDDING_API_KEY", Category: "AI", Sensitive: true, Description: "API key of the embeddings endpoint (empty: OPENAI_API_KEY)"})
	SimilarityPairThreshold = floatSetting(SettingDef{Key: "SIMILARITY_PAIR_THRESHOLD", Category: "Search", Type: TypeSlider, Default: "0.5", Description: "Similarity above which document pairs are stored", Check: FloatBetween(0, 1)})
	SimilarityPairLimit     = intSetting(SettingDef{Key: "SIMILARITY_PAIR_LIMIT", Category: "Search", Default: "20", Description: "Most similar documents stored as pairs per document", Check: IntBetween(1, 200)})

	// Notifications
	WebhookTimeout                = secondsSetting(SettingDef{Key: "WEBHOOK_TIMEOUT", Category: "Notifications", Default: "10", Description: "Webhook delivery timeout in seconds", Check: AtLeast(1)})
	WebhookConcurrency            = intSetting(SettingDef{Key: "WEBHOOK_CONCURRENCY", Category: "Notifications", Default: "4", Description: "Delivery attempts to one receiver (a webhook, an automation hook, a device, an admin channel) that may run at once: a receiver that hangs on some events keeps the other slots for its retries and newer events", Check: IntBetween(1, 64)})
	WebhookRetryDelays            = durationsSetting(SettingDef{Key: "WEBHOOK_RETRY_DELAYS", Category: "Notifications", RestartRequired: true, Default: "60,300,900", Description: "Retry delays of a failed webhook delivery (jitter ±20 %)", Check: Durations()})
	WebhookAllowedHosts           = listSetting(SettingDef{Key: "WEBHOOK_ALLOWED_HOSTS", Category: "Notifications", Description: "Hosts webhooks, automation hooks, the push relay and notification channels may be delivered to even when they resolve to private addresses: host (every port) or host:port (that port only; IPv6 as [addr]:port)", Check: AllowList()})
	PushRelayURL                  = stringSetting(SettingDef{Key: "PUSH_RELAY_URL", Category: "Notifications", Default: "https://exp.host/--/api/v2/push/send", Description: "Push notification relay", Check: URLs("https", "http")})
	NotificationURLs              = listSetting(SettingDef{Key: "NOTIFICATION_URLS", Category: "Notifications", Sensitive: true, Description: "Admin notification channels, comma-separated, in Apprise URL syntax: mailto, json/jsons, ntfy/ntfys, gotify/gotifys, slack, discord, msteams (tokens in them make the setting secret)", Check: URLList()})
	IntegrationFailingNotifyAfter = durationSetting(SettingDef{Key: "INTEGRATION_FAILING_NOTIFY_AFTER", Category: "Notifications", Default: "1h", Description: "Send an admin notification, once, when an integration has been failing this long (90s, 30m, 1h); it is sent again only after the integration recovered and failed anew", Check: Duration()})
	NotifyOnDocumentFailed        = boolSetting(SettingDef{Key: "NOTIFY_ON_DOCUMENT_FAILED", Category: "Notifications", Default: "false", Description: "Send an admin notification when a document fails after its retries"})
	SMTPHost                      = stringSetting(SettingDef{Key: "SMTP_HOST", Category: "Notifications", Description: "SMTP server for e-mail"})
	SMTPPort                      = intSetting(SettingDef{Key: "SMTP_PORT", Category: "Notifications", Default: "587", Description: "SMTP port", Check: IntBetween(1, 65535)})
	SMTPUsername                  = stringSetting(SettingDef{Key: "SMTP_USERNAME", Category: "Notifications", Description: "SMTP user"})
	SMTPPassword                  = stringSetting(SettingDef{Key: "SMTP_PASSWORD", Category: "Notifications", Sensitive: true, Description: "SMTP password"})
	SMTPFrom                      = stringSetting(SettingDef{Key: "SMTP_FROM", Category: "Notifications", Description: "Sender address of e-mail", Check: EmailAddress()})

	// Mobile
	MobileDevClientEnabled  = boolSetting(SettingDef{Key: "MOBILE_DEV_CLIENT_ENABLED", Category: "Mobile", Default: "false", Description: "Let the mobile login hand tokens to the development client (exp:// redirect URIs), and then only on loopback or private-network hosts; docflow:// is always accepted"})
	MobileTokenInRedirect   = boolSetting(SettingDef{Key: "MOBILE_TOKEN_IN_REDIRECT", Category: "Mobile", Default: "true", Description: "Let the mobile login put an API token in the redirect to the app (?token=, the original app's flow); false: only apps that send a PKCE code_challenge get a one-time code, which they exchange at POST /api/mobile/token"})
	MobileTokenLifetimeDays = intSetting(SettingDef{Key: "MOBILE_TOKEN_LIFETIME_DAYS", Category: "Mobile", Default: "365", Description: "Days a token handed to the mobile app by the browser login stays valid (1 to 3650)", Check: IntBetween(1, 3650)})

	// Rate limiting
	RateLimitingEnabled = boolSetting(SettingDef{Key: "RATE_LIMITING_ENABLED", Category: "Rate limiting", Default: "true", Description: "Enforce the API rate limits: RATE_LIMIT_DEFAULT, RATE_LIMIT_UPLOAD, RATE_LIMIT_AUTH and the per-user upload window (false switches all of them off; a profile's daily upload limit is not a rate limit and stays)"})
	RateLimitDefault    = stringSetting(SettingDef{Key: "RATE_LIMIT_DEFAULT", Category: "Rate limiting", Default: "100/minute", Description: "Default endpoint limit", Check: RateLimit()})
	RateLimitUpload     = stringSetting(SettingDef{Key: "RATE_LIMIT_UPLOAD", Category: "Rate limiting", Default: "600/minute", Description: "Upload endpoint limit", Check: RateLimit()})
	RateLimitAuth       = stringSetting(SettingDef{Key: "RATE_LIMIT_AUTH", Category: "Rate limiting", Default: "10/minute", Description: "Authentication endpoint limit, per client address (an IPv6 /64 counts as one)", Check: RateLimit()})

	// Storage / destinations
	DropboxAPIURL       = stringSetting(SettingDef{Key: "DROPBOX_API_URL", Category: "Storage", Default: "https://api.dropboxapi.com", Description: "Dropbox API base URL (RPC calls and the token endpoint, <url>/oauth2/token)", Check: URLs("https", "http")})
	DropboxContentURL   = stringSetting(SettingDef{Key: "DROPBOX_CONTENT_URL", Category: "Storage", Default: "https://content.dropboxapi.com", Description: "Dropbox content base URL (uploads)", Check: URLs("https", "http")})
	OneDriveAPIURL      = stringSetting(SettingDef{Key: "ONEDRIVE_API_URL", Category: "Storage", Default: "https://graph.microsoft.com/v1.0", Description: "OneDrive (Microsoft Graph) API base URL, with its version", Check: URLs("https", "http")})
	OneDriveLoginURL    = stringSetting(SettingDef{Key: "ONEDRIVE_LOGIN_URL", Category: "Storage", Default: "https://login.microsoftonline.com", Description: "Microsoft identity platform of OneDrive's tokens (<url>/<tenant>/oauth2/v2.0/token); login.microsoftonline.us or login.chinacloudapi.cn for sovereign clouds", Check: URLs("https", "http")})
	GoogleDriveAPIURL   = stringSetting(SettingDef{Key: "GOOGLE_DRIVE_API_URL", Category: "Storage", Default: "https://www.googleapis.com", Description: "Google Drive API base URL (the host of /drive/v3 and /upload/drive/v3)", Check: URLs("https", "http")})
	GoogleOAuthTokenURL = stringSetting(SettingDef{Key: "GOOGLE_OAUTH_TOKEN_URL", Category: "Storage", Default: "https://oauth2.googleapis.com/token", Description: "Google's OAuth token endpoint (Google Drive's tokens)", Check: URLs("https", "http")})

	// Advanced
	ListQueryConcurrency  = intSetting(SettingDef{Key: "LIST_QUERY_CONCURRENCY", Category: "Advanced", RestartRequired: true, Default: "0", Description: "File listings one process runs in the database at once; the others wait their turn (0 = the number of cores)", Check: AtLeast(0)})
	EnableFactoryReset    = boolSetting(SettingDef{Key: "ENABLE_FACTORY_RESET", Category: "Advanced", Default: "false", Description: "Allow the system reset endpoints"})
	FactoryResetOnStartup = boolSetting(SettingDef{Key: "FACTORY_RESET_ON_STARTUP", Category: "Advanced", Default: "false", Description: "Wipe everything at start"})
	SearchIndexerBatch    = intSetting(SettingDef{Key: "SEARCH_INDEXER_BATCH", Category: "Search", Default: "200", Description: "Documents per bulk index request", Check: IntBetween(1, 5000)})
)
