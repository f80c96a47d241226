package http

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"docflow"
)

// The audit details of integrations say what was done and where it points
// (the endpoint keys' values: hosts, ports, URLs, the security mode, host
// keys), never credentials. A CA certificate is only said to be set.

// integrationAuditMax bounds one detail.
const integrationAuditMax = 1000

func integrationTarget(id int64) string {
	if id == 0 {
		return "integration:unsaved"
	}
	return "integration:" + strconv.FormatInt(id, 10)
}

// integrationCreateDetail is "<TYPE> <DIRECTION> "<name>"; <endpoint>;
// credentials given|none; inactive".
func integrationCreateDetail(in *docflow.Integration) string {
	parts := []string{fmt.Sprintf("%s %s %q", in.IntegrationType, in.Direction, in.Name)}
	if ep := integrationEndpoint(in); ep != "" {
		parts = append(parts, ep)
	}
	parts = append(parts, "credentials "+map[bool]string{true: "given", false: "none"}[in.HasCredentials])
	if !in.IsActive {
		parts = append(parts, "inactive")
	}
	return clipText(strings.Join(parts, "; "), integrationAuditMax)
}

// integrationUpdateDetail names what an update changed: the name, the
// config keys (with the endpoint's values after), the credentials, the
// active flag.
func integrationUpdateDetail(before, after *docflow.Integration, credentials bool) string {
	var changed []string
	if before.Name != after.Name {
		changed = append(changed, fmt.Sprintf("name %q", after.Name))
	}
	keys := map[string]bool{}
	for k := range before.Config {
		keys[k] = true
	}
	for k := range after.Config {
		keys[k] = true
	}
	var cfg []string
	for k := range keys {
		b, _ := json.Marshal(before.Config[k])
		a, _ := json.Marshal(after.Config[k])
		if string(a) != string(b) {
			cfg = append(cfg, "config."+k)
		}
	}
	slices.Sort(cfg)
	changed = append(changed, cfg...)
	if credentials {
		changed = append(changed, "credentials")
	}
	if before.IsActive != after.IsActive {
		changed = append(changed, "is_active="+strconv.FormatBool(after.IsActive))
	}
	if len(changed) == 0 {
		changed = []string{"nothing"}
	}
	d := fmt.Sprintf("%s %q: changed %s", after.IntegrationType, after.Name, strings.Join(changed, ", "))
	if len(cfg) > 0 {
		if ep := integrationEndpoint(after); ep != "" {
			d += "; now " + ep
		}
	}
	return clipText(d, integrationAuditMax)
}

// integrationTestDetail is "<TYPE> <endpoint>: success|failed".
func integrationTestDetail(in *docflow.Integration, ok bool) string {
	d := in.IntegrationType
	if ep := integrationEndpoint(in); ep != "" {
		d += " " + ep
	}
	return clipText(d+": "+map[bool]string{true: "success", false: "failed"}[ok], integrationAuditMax)
}

// integrationEndpoint lists the endpoint keys that are set, as key=value
// (PEM certificates as "set").
func integrationEndpoint(in *docflow.Integration) string {
	t, ok := docflow.LookupIntegrationType(in.IntegrationType)
	if !ok {
		return ""
	}
	var out []string
	for _, k := range t.Config {
		v, set := in.Config[k.Name]
		if !k.Endpoint || !set || v == nil || v == "" {
			continue
		}
		if k.Kind == docflow.KeyPEM {
			out = append(out, k.Name+"=set")
		} else {
			out = append(out, fmt.Sprintf("%s=%v", k.Name, v))
		}
	}
	return strings.Join(out, " ")
}
