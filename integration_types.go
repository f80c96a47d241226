package docflow

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Integration types (decisions.md, Integrations). The API takes them in any
// case and stores them upper case.
const (
	IntegrationIMAP        = "IMAP"
	IntegrationLocal       = "LOCAL"
	IntegrationWebDAV      = "WEBDAV"
	IntegrationNextcloud   = "NEXTCLOUD"
	IntegrationS3          = "S3"
	IntegrationSFTP        = "SFTP"
	IntegrationFTP         = "FTP"
	IntegrationEmail       = "EMAIL"
	IntegrationPaperless   = "PAPERLESS"
	IntegrationDropbox     = "DROPBOX"
	IntegrationGoogleDrive = "GOOGLE_DRIVE"
	IntegrationOneDrive    = "ONEDRIVE"
)

// KeyKind is how one config or credential value is checked.
type KeyKind int

const (
	KeyString      KeyKind = iota // any text up to MaxLen
	KeyInt                        // a JSON integer within Min..Max
	KeyBool                       // a JSON boolean
	KeyEnum                       // one of Enum
	KeyURL                        // an absolute http(s) URL with a host
	KeyHost                       // a host name or IP address, no scheme nor port
	KeyPath                       // a path on the remote side (no NUL, no control characters)
	KeyLocalPath                  // a folder relative to the owner's local destination folder: no "..", no NUL
	KeyFingerprint                // an SSH host key fingerprint, SHA256:<base64 of 32 bytes>
	KeyPEM                        // one or more PEM CERTIFICATE blocks that parse as X.509
	KeyTemplate                   // a file name template with FilenamePlaceholders only
	KeyEmailList                  // comma-separated e-mail addresses
	KeyPort                       // a port 1–65535; as a credential, its decimal text
	KeyFolder                     // a mailbox or folder name, not empty
)

// IntegrationKey describes one key of an integration's config or
// credentials.
type IntegrationKey struct {
	Name     string
	Kind     KeyKind
	Required bool
	// Default is filled into config when the key is absent (nil = none).
	Default any
	Min     int64 // KeyInt
	Max     int64 // KeyInt
	Enum    []string
	// MaxLen bounds a text value (0 = 4096).
	MaxLen int
	// Endpoint marks a config key that says where the integration
	// connects or whom it trusts there (host, port, URL, security, CA,
	// host key): a change sends the credentials somewhere new, so it
	// needs them given again (CheckEndpointChange).
	Endpoint bool
}

// IntegrationType is one row of the catalogue.
type IntegrationType struct {
	Type      string
	Direction string
	// TLS types also take config.ca_certificate.
	TLS         bool
	Config      []IntegrationKey
	Credentials []IntegrationKey
	// OneOfCredentials, when set, names credentials of which at least one
	// is required (SFTP: password or private_key).
	OneOfCredentials []string
}

// FilenamePlaceholders are the placeholders of a destination's
// filename_template.
var FilenamePlaceholders = []string{"title", "date", "original_filename", "id", "category"}

// DefaultFilenameTemplate is a destination's filename_template when none is
// given.
const DefaultFilenameTemplate = "{original_filename}"

// Sizes of the longer values.
const (
	maxKeyText    = 4096
	maxCertPEM    = 64 << 10
	maxPrivateKey = 16 << 10
)

func cfgText(name string, required bool, def any) IntegrationKey {
	return IntegrationKey{Name: name, Kind: KeyString, Required: required, Default: def}
}

func credKey(name string, required bool) IntegrationKey {
	return IntegrationKey{Name: name, Kind: KeyString, Required: required}
}

func portKey(def int64) IntegrationKey {
	return IntegrationKey{Name: "port", Kind: KeyPort, Default: def}
}

func hostKey() IntegrationKey {
	return IntegrationKey{Name: "host", Kind: KeyHost, Required: true}
}

func urlKey() IntegrationKey {
	return IntegrationKey{Name: "url", Kind: KeyURL, Required: true}
}

func remotePathKey() IntegrationKey {
	return IntegrationKey{Name: "path", Kind: KeyPath, Default: "/"}
}

// integrationTypes is decisions.md's table, row by row. The common keys
// (ca_certificate for TLS types, filename_template for destinations) are
// added by init, which also marks every host, port, URL, CA and host-key
// key as an endpoint key; other keys that choose how the connection is
// secured (security, tls) are marked here.
var integrationTypes = []IntegrationType{
	{Type: IntegrationIMAP, Direction: DirectionSource, TLS: true,
		Config: []IntegrationKey{
			hostKey(),
			portKey(993),
			{Name: "security", Kind: KeyEnum, Enum: []string{"tls", "starttls", "none"}, Default: "tls", Endpoint: true},
			{Name: "folder", Kind: KeyFolder, Default: "INBOX"},
			{Name: "poll_interval", Kind: KeyInt, Min: 10, Max: 86400, Default: int64(60)},
			{Name: "move_to_folder", Kind: KeyString},
			{Name: "delete_after_process", Kind: KeyBool, Default: false},
			{Name: "allow_insecure", Kind: KeyBool, Default: false},
			{Name: "max_attachments", Kind: KeyInt, Min: 1, Max: 10000, Default: int64(50)},
		},
		Credentials: []IntegrationKey{credKey("username", true), credKey("password", true)}},
	{Type: IntegrationLocal, Direction: DirectionDestination,
		Config: []IntegrationKey{{Name: "path", Kind: KeyLocalPath, Required: true}}},
	{Type: IntegrationWebDAV, Direction: DirectionDestination, TLS: true,
		Config:      []IntegrationKey{urlKey(), remotePathKey()},
		Credentials: []IntegrationKey{credKey("username", false), credKey("password", false)}},
	{Type: IntegrationNextcloud, Direction: DirectionDestination, TLS: true,
		Config:      []IntegrationKey{urlKey(), remotePathKey()},
		Credentials: []IntegrationKey{credKey("username", true), credKey("password", true)}},
	{Type: IntegrationS3, Direction: DirectionDestination, TLS: true,
		Config: []IntegrationKey{
			{Name: "endpoint", Kind: KeyURL},
			cfgText("bucket", true, nil),
			cfgText("region", false, "us-east-1"),
			cfgText("prefix", false, nil),
			{Name: "path_style", Kind: KeyBool, Default: false},
		},
		Credentials: []IntegrationKey{credKey("access_key_id", true), credKey("secret_access_key", true)}},
	{Type: IntegrationSFTP, Direction: DirectionDestination,
		Config: []IntegrationKey{
			hostKey(),
			portKey(22),
			remotePathKey(),
			{Name: "host_key_fingerprint", Kind: KeyFingerprint, Required: true},
		},
		Credentials: []IntegrationKey{credKey("username", true), credKey("password", false),
			{Name: "private_key", Kind: KeyString, MaxLen: maxPrivateKey}},
		OneOfCredentials: []string{"password", "private_key"}},
	{Type: IntegrationFTP, Direction: DirectionDestination, TLS: true,
		Config: []IntegrationKey{
			hostKey(),
			portKey(21),
			remotePathKey(),
			{Name: "tls", Kind: KeyEnum, Enum: []string{"explicit", "none"}, Default: "explicit", Endpoint: true},
		},
		Credentials: []IntegrationKey{credKey("username", true), credKey("password", true)}},
	{Type: IntegrationEmail, Direction: DirectionDestination, TLS: true,
		Config: []IntegrationKey{
			{Name: "to", Kind: KeyEmailList, Required: true},
			cfgText("subject", false, "{title}"),
		},
		Credentials: []IntegrationKey{
			{Name: "smtp_host", Kind: KeyHost},
			{Name: "smtp_port", Kind: KeyPort},
			credKey("smtp_username", false),
			credKey("smtp_password", false),
		}},
	{Type: IntegrationPaperless, Direction: DirectionDestination, TLS: true,
		Config:      []IntegrationKey{urlKey()},
		Credentials: []IntegrationKey{credKey("token", true)}},
	{Type: IntegrationDropbox, Direction: DirectionDestination,
		Config:      []IntegrationKey{remotePathKey()},
		Credentials: []IntegrationKey{credKey("refresh_token", true), credKey("app_key", true), credKey("app_secret", true)}},
	{Type: IntegrationGoogleDrive, Direction: DirectionDestination,
		Config:      []IntegrationKey{cfgText("folder_id", false, "root")},
		Credentials: []IntegrationKey{credKey("refresh_token", true), credKey("client_id", true), credKey("client_secret", true)}},
	{Type: IntegrationOneDrive, Direction: DirectionDestination,
		Config:      []IntegrationKey{remotePathKey(), cfgText("tenant", false, "common")},
		Credentials: []IntegrationKey{credKey("refresh_token", true), credKey("client_id", true), credKey("client_secret", true)}},
}

var integrationTypeIndex = map[string]*IntegrationType{}

func init() {
	for i := range integrationTypes {
		t := &integrationTypes[i]
		if t.TLS {
			t.Config = append(t.Config, IntegrationKey{Name: "ca_certificate", Kind: KeyPEM, MaxLen: maxCertPEM})
		}
		if t.Direction == DirectionDestination {
			t.Config = append(t.Config, IntegrationKey{Name: "filename_template", Kind: KeyTemplate, Default: DefaultFilenameTemplate, MaxLen: 500})
		}
		for j := range t.Config {
			// Whatever names a server, a port, a URL, a CA or a host key
			// is an endpoint key in every type, present and future.
			switch t.Config[j].Kind {
			case KeyHost, KeyPort, KeyURL, KeyPEM, KeyFingerprint:
				t.Config[j].Endpoint = true
			}
		}
		integrationTypeIndex[t.Type] = t
	}
}

// LookupIntegrationType returns the catalogue row of typ (upper case).
func LookupIntegrationType(typ string) (IntegrationType, bool) {
	t, ok := integrationTypeIndex[typ]
	if !ok {
		return IntegrationType{}, false
	}
	return *t, true
}

// IntegrationTypeNames lists the catalogue's types, sorted.
func IntegrationTypeNames() []string {
	out := make([]string, 0, len(integrationTypes))
	for _, t := range integrationTypes {
		out = append(out, t.Type)
	}
	sort.Strings(out)
	return out
}

// Key returns the config key called name.
func (t IntegrationType) Key(name string) (IntegrationKey, bool) {
	for _, k := range t.Config {
		if k.Name == name {
			return k, true
		}
	}
	return IntegrationKey{}, false
}

// CredentialKey returns the credential key called name.
func (t IntegrationType) CredentialKey(name string) (IntegrationKey, bool) {
	for _, k := range t.Credentials {
		if k.Name == name {
			return k, true
		}
	}
	return IntegrationKey{}, false
}

// ChangedEndpoints returns the endpoint keys of t (IntegrationKey.Endpoint)
// whose values differ between two checked configs (defaults filled in),
// in the catalogue's order.
func (t IntegrationType) ChangedEndpoints(before, after map[string]any) []string {
	var out []string
	for _, k := range t.Config {
		if !k.Endpoint {
			continue
		}
		b, _ := json.Marshal(before[k.Name])
		a, _ := json.Marshal(after[k.Name])
		if !bytes.Equal(a, b) {
			out = append(out, k.Name)
		}
	}
	return out
}

// CheckEndpointChange refuses a change of a stored integration that moves
// its endpoint (ChangedEndpoints between the stored config and the new
// one) while it keeps stored credentials: stored credentials go only to
// the endpoint they were given for. It is EINVALID on the field
// credentials; nil when nothing moves, the integration has no stored
// credentials, or the change gives credentials of its own.
func CheckEndpointChange(t IntegrationType, stored, next map[string]any, hasStored, credentialsGiven bool) error {
	if !hasStored || credentialsGiven {
		return nil
	}
	keys := t.ChangedEndpoints(stored, next)
	if len(keys) == 0 {
		return nil
	}
	e := Errorf(EINVALID, "changing config.%s needs the credentials given again: stored credentials are only sent to the server they were given for",
		strings.Join(keys, ", config."))
	e.Fields = []FieldError{{Field: "credentials", Message: e.Message}}
	return e
}
