package docflow

import (
	"strings"
	"testing"
	"time"
)

func catalogueDef(t *testing.T, key string) *SettingDef {
	t.Helper()
	for _, d := range Catalogue() {
		if d.Key == key {
			return &d
		}
	}
	t.Fatalf("no setting %s", key)
	return nil
}

// Every built-in default is a value the service can use.
func TestCatalogueDefaultsAreValid(t *testing.T) {
	defs := Catalogue()
	err := ValidateSettings(defs, func(key string) (string, string) {
		for _, d := range defs {
			if d.Key == key {
				return d.Default, "default"
			}
		}
		return "", "default"
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A value of the right type that the service still cannot use is refused
// with a message that names the setting, the value and why.
func TestSettingValuesTheServiceCannotUse(t *testing.T) {
	for _, c := range []struct {
		key, value string
		why        string // "" = accepted
	}{
		{"STEP_RETRY_DELAYS", "1,1", ""},
		{"STEP_RETRY_DELAYS", "60s, 300, 1.5m,250ms", ""},
		{"STEP_RETRY_DELAYS", "", ""},
		{"STEP_RETRY_DELAYS", "1,x", `"x" is not a duration`},
		{"STEP_RETRY_DELAYS", "60s,-5s", `"-5s" is not a positive duration`},
		{"STEP_RETRY_DELAYS", "0", `"0" is not a positive duration`},
		{"STEP_TIMEOUT", "0", "must be at least 1"},
		{"STEP_TIMEOUT", "ten", "must be an integer"},
		{"KAFKA_PARTITIONS", "0", "must be between 1 and 10000"},
		{"TEXT_QUALITY_THRESHOLD", "150", "must be between 0 and 100"},
		{"SIMILARITY_PAIR_THRESHOLD", "0.7", ""},
		{"SIMILARITY_PAIR_THRESHOLD", "-0.1", "must be between 0 and 1"},
		{"LISTEN_ADDR", "8000", `"8000" is not host:port`},
		{"LISTEN_ADDR", ":8000", ""},
		{"LISTEN_ADDR", "127.0.0.1:99999", "not a number from 0 to 65535"},
		{"KAFKA_BROKERS", "k1:9092, k2:9092", ""},
		{"KAFKA_BROKERS", "k1", `"k1" is not host:port`},
		{"BASE_URL", "https://docs.example.com", ""},
		{"BASE_URL", "docs.example.com", "must be a URL starting with http:// or https://"},
		{"BASE_URL", "ftp://docs.example.com", "must be a URL starting with http:// or https://"},
		{"DATABASE_URL", "postgres://u:secret@db:5432/docflow", ""},
		{"DATABASE_URL", "host=db dbname=docflow", ""},
		{"DATABASE_URL", "postgres:///docflow?host=/var/run/postgresql", ""},
		{"DATABASE_URL", "postgres:///docflow", "names no host"},
		{"DATABASE_URL", "mysql:///docflow?host=/var/run/mysqld", "must be a URL starting with postgres:// or postgresql://"},
		{"DATABASE_URL", "mysql://u:secret@db/docflow", `"mysql://u:xxxxx@db/..." must be a URL starting with postgres:// or postgresql://`},
		{"RATE_LIMIT_DEFAULT", "100/minute", ""},
		{"RATE_LIMIT_DEFAULT", "50 per hour", ""},
		{"RATE_LIMIT_UPLOAD", "100/fortnight", "the period must be second, minute, hour or day"},
		{"RATE_LIMIT_AUTH", "many", "is not a rate"},
		{"STEP_POOL_SIZES", "ocr=2, convert_to_pdf=3", ""},
		{"STEP_POOL_SIZES", "ocr=0", `"ocr=0" is not a pool size`},
		{"TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.1", ""},
		{"TRUSTED_PROXIES", "proxy.local", `"proxy.local" is not an IP address`},
		{"LOG_LEVEL", "loud", "must be one of: debug, info, warn, error"},
		{"AUTH_ENABLED", "maybe", "must be true or false"},
		{"TESSERACT_LANGUAGE", "eng+deu", ""},
		{"TESSERACT_LANGUAGE", "eng, deu", "must be Tesseract language codes joined with +"},
		{"SMTP_FROM", "docflow <noreply@example.com>", ""},
		{"SMTP_FROM", "noreply", "is not an e-mail address"},
		{"NOTIFICATION_URLS", "ntfys://ntfy.sh/docflow, mailto://user@example.com", ""},
		{"WORKDIR", "", "must not be empty"},
	} {
		err := ValidateSettingValue(catalogueDef(t, c.key), c.value)
		switch {
		case c.why == "" && err != nil:
			t.Errorf("%s=%q refused: %v", c.key, c.value, err)
		case c.why != "" && ErrorCode(err) != EINVALID:
			t.Errorf("%s=%q: %v, want EINVALID", c.key, c.value, err)
		case c.why != "":
			msg := ErrorMessage(err)
			if !strings.HasPrefix(msg, c.key+"=") || !strings.Contains(msg, c.why) {
				t.Errorf("%s=%q: %q, want the setting, the value and %q", c.key, c.value, msg, c.why)
			}
		}
	}
}

// NOTIFICATION_URLS is sensitive (its entries hold tokens): a bad value is
// refused without being quoted in the setting's name.
func TestNotificationURLsAreCheckedAndHidden(t *testing.T) {
	err := ValidateSettingValue(catalogueDef(t, "NOTIFICATION_URLS"), "ntfy.sh/docflow")
	if msg := ErrorMessage(err); ErrorCode(err) != EINVALID || !strings.HasPrefix(msg, "NOTIFICATION_URLS (a hidden value") ||
		!strings.Contains(msg, "must be a URL") {
		t.Fatalf("%v", err)
	}
	// The entry's path and query (tokens) are not quoted either.
	err = ValidateSettingValue(catalogueDef(t, "NOTIFICATION_URLS"), "gotify://push.example.com/Atoken123?priority=1, slack://")
	if msg := ErrorMessage(err); err == nil || strings.Contains(msg, "Atoken123") || strings.Contains(msg, "priority") {
		t.Fatalf("%v", err)
	}
}

// A sensitive value is never quoted back.
func TestSensitiveSettingValueIsNotShown(t *testing.T) {
	err := ValidateSettingValue(catalogueDef(t, "SESSION_SECRET"), "short-secret")
	if msg := ErrorMessage(err); err == nil || strings.Contains(msg, "short-secret") ||
		!strings.Contains(msg, "SESSION_SECRET") || !strings.Contains(msg, "at least 32 characters") {
		t.Fatalf("%v", err)
	}
}

// WORKER_METRICS_ADDR is off when empty, else a host:port; the ClickHouse
// password is sensitive (hidden by `docflow settings` and in messages).
func TestWorkerMetricsAddrAndClickHouseCredentials(t *testing.T) {
	def := catalogueDef(t, "WORKER_METRICS_ADDR")
	for _, ok := range []string{"", "0.0.0.0:9100", "127.0.0.1:9101"} {
		if err := ValidateSettingValue(def, ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"9100", "host", "h:port"} {
		if err := ValidateSettingValue(def, bad); ErrorCode(err) != EINVALID {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	if !catalogueDef(t, "CLICKHOUSE_PASSWORD").Sensitive || catalogueDef(t, "CLICKHOUSE_USER").Sensitive {
		t.Fatal("CLICKHOUSE_PASSWORD must be sensitive, CLICKHOUSE_USER need not be")
	}
}

// ValidateSettings lists every value that cannot be used with its source.
func TestValidateSettingsNamesEachBadValueAndItsSource(t *testing.T) {
	values := map[string][2]string{
		"STEP_RETRY_DELAYS": {"1,x", "env"},
		"KAFKA_PARTITIONS":  {"0", "db"},
	}
	err := ValidateSettings(Catalogue(), func(key string) (string, string) {
		if v, ok := values[key]; ok {
			return v[0], v[1]
		}
		return catalogueDefault(key), "default"
	})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"2 settings cannot be used",
		`STEP_RETRY_DELAYS="1,x" (from the environment): "x" is not a duration`,
		`KAFKA_PARTITIONS="0" (set through the settings API): must be between 1 and 10000`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func catalogueDefault(key string) string {
	for _, d := range Catalogue() {
		if d.Key == key {
			return d.Default
		}
	}
	return ""
}

func TestParseDurationsKeepsEqualDelays(t *testing.T) {
	d, err := ParseDurations("1,1, 2.5")
	if err != nil || len(d) != 3 || d[0] != time.Second || d[1] != time.Second || d[2] != 2500*time.Millisecond {
		t.Fatalf("%v %v", d, err)
	}
}

// A password in a URL is never quoted back, parsed or not.
func TestURLPasswordIsNotShown(t *testing.T) {
	for _, v := range []string{"mysql://u:hunter2@db/docflow", "postgres://u:hun%zzter2@db/docflow"} {
		err := ValidateSettingValue(catalogueDef(t, "DATABASE_URL"), v)
		if err == nil || strings.Contains(ErrorMessage(err), "hunter2") || strings.Contains(ErrorMessage(err), "zzter2") {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// A URL that does not parse shows no more than one that does: the token
// in its path or query is hidden with its password (found by
// FuzzSettingValue).
func TestUnparsedURLPathIsNotShown(t *testing.T) {
	for _, v := range []string{"gotify://push.example.com/Atoken123%zz", "ntfy://u:pw@h:x/Atoken123?p=1", "json://h%zz?token=Atoken123"} {
		err := ValidateSettingValue(catalogueDef(t, "NOTIFICATION_URLS"), v)
		if msg := ErrorMessage(err); err == nil || strings.Contains(msg, "Atoken123") || strings.Contains(msg, "pw") {
			t.Errorf("%s: %v", v, err)
		}
	}
}
