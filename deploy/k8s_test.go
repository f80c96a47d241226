package deploy_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"docflow"
	dfhttp "docflow/http"
)

// rendered is one kustomization's output, each object decoded strictly
// into its Kubernetes type.
type rendered struct {
	deployments  map[string]*appsv1.Deployment
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	pdbs         map[string]*policyv1.PodDisruptionBudget
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	jobs         map[string]*batchv1.Job
	pvcs         map[string]*corev1.PersistentVolumeClaim
	namespaces   map[string]*corev1.Namespace
	scaledObject map[string]*scaledObject
}

// decode decodes one object of the output strictly into the type of its
// kind, after checking its apiVersion. A kind the test has no type for
// fails it.
func (r *rendered) decode(kind, apiVersion, name string, doc []byte) error {
	into := func(want string, v any) error {
		if apiVersion != want {
			return fmt.Errorf("%s %s: apiVersion %s, want %s", kind, name, apiVersion, want)
		}
		// UnmarshalStrict refuses unknown and duplicate fields, as the API
		// server's strict field validation does.
		if err := yaml.UnmarshalStrict(doc, v); err != nil {
			return fmt.Errorf("%s %s: %v", kind, name, err)
		}
		return nil
	}
	switch kind {
	case "Deployment":
		v := &appsv1.Deployment{}
		r.deployments[name] = v
		return into("apps/v1", v)
	case "Service":
		v := &corev1.Service{}
		r.services[name] = v
		return into("v1", v)
	case "ConfigMap":
		v := &corev1.ConfigMap{}
		r.configMaps[name] = v
		return into("v1", v)
	case "Secret":
		v := &corev1.Secret{}
		r.secrets[name] = v
		return into("v1", v)
	case "PodDisruptionBudget":
		v := &policyv1.PodDisruptionBudget{}
		r.pdbs[name] = v
		return into("policy/v1", v)
	case "HorizontalPodAutoscaler":
		v := &autoscalingv2.HorizontalPodAutoscaler{}
		r.hpas[name] = v
		return into("autoscaling/v2", v)
	case "Job":
		v := &batchv1.Job{}
		r.jobs[name] = v
		return into("batch/v1", v)
	case "PersistentVolumeClaim":
		v := &corev1.PersistentVolumeClaim{}
		r.pvcs[name] = v
		return into("v1", v)
	case "Namespace":
		v := &corev1.Namespace{}
		r.namespaces[name] = v
		return into("v1", v)
	case "ScaledObject":
		v := &scaledObject{}
		r.scaledObject[name] = v
		return into("keda.sh/v1alpha1", v)
	}
	return fmt.Errorf("%s %s: a kind the test has no type for (add it)", kind, name)
}

// render builds deploy/k8s/<dir> with kustomize's library, as `kubectl
// apply -k` would, from an in-memory copy of deploy/k8s in which each
// secrets.env.example stands for the secrets.env a user writes.
func render(t *testing.T, dir string) *rendered {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	err := filepath.WalkDir("k8s", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return mem.MkdirAll("/" + p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if d.Name() == "secrets.env" {
			return fmt.Errorf("%s exists: a filled-in Secret must not be in the tree", p)
		}
		if d.Name() == "secrets.env.example" {
			if err := mem.WriteFile("/"+path.Join(path.Dir(p), "secrets.env"), b); err != nil {
				return err
			}
		}
		return mem.WriteFile("/"+p, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/k8s/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	r := &rendered{
		deployments: map[string]*appsv1.Deployment{}, services: map[string]*corev1.Service{},
		configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{},
		pdbs: map[string]*policyv1.PodDisruptionBudget{}, hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		jobs: map[string]*batchv1.Job{}, pvcs: map[string]*corev1.PersistentVolumeClaim{},
		namespaces: map[string]*corev1.Namespace{}, scaledObject: map[string]*scaledObject{},
	}
	for _, res := range out.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.decode(res.GetKind(), res.GetApiVersion(), res.GetName(), doc); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	return r
}

// kustomizations are the directories users apply.
var kustomizations = []string{"base", "overlays/production"}

// TestKubernetesManifests renders every kustomization and checks what
// keeps a deployment working: probes on paths and ports docflow serves,
// real commands, real settings, sane resources, budgets and autoscalers
// that select what they mean to, and docflow's shutdown bound.
func TestKubernetesManifests(t *testing.T) {
	t.Parallel()
	for _, dir := range kustomizations {
		t.Run(strings.ReplaceAll(dir, "/", "_"), func(t *testing.T) {
			t.Parallel()
			r := render(t, dir)
			if len(r.deployments) != 2 || r.deployments["docflow-api"] == nil || r.deployments["docflow-worker"] == nil {
				t.Fatalf("deployments %v, want docflow-api and docflow-worker", keys(r.deployments))
			}
			settings := r.settings(t, "docflow-config")
			for name, d := range r.deployments {
				checkPod(t, r, name, d, settings)
			}
			checkServices(t, r)
			checkBudgets(t, r)
			checkAPIAutoscaler(t, r)
			checkConfigAndSecrets(t, r)
		})
	}
}

// settings returns the data of the ConfigMap generated as name (its
// rendered name carries a hash suffix).
func (r *rendered) settings(t *testing.T, name string) map[string]string {
	t.Helper()
	var found []string
	var data map[string]string
	for n, cm := range r.configMaps {
		if strings.HasPrefix(n, name+"-") || n == name {
			found = append(found, n)
			data = cm.Data
		}
	}
	if len(found) != 1 {
		t.Fatalf("ConfigMaps named %s: %v, want one", name, found)
	}
	return data
}

// listenPort is a setting's port (LISTEN_ADDR, WORKER_METRICS_ADDR).
func listenPort(t *testing.T, key, value string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(value)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, value, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, value, err)
	}
	return int32(n)
}

// servedBy is the setting naming the listener each command serves the
// probes on: the API on LISTEN_ADDR, a worker on WORKER_METRICS_ADDR
// (http.ServeMetrics answers them there).
var servedBy = map[string]string{"api": docflow.ListenAddr.Key(), "worker": docflow.WorkerMetricsAddr.Key()}

func checkPod(t *testing.T, r *rendered, name string, d *appsv1.Deployment, cfg map[string]string) {
	t.Helper()
	spec := d.Spec.Template.Spec
	commands := docflowCommands(t)
	if !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: selector %v does not match its pods' labels %v", name, d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}

	// Non-root, no privilege, a read-only root filesystem.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: the pod must run as a numeric non-root user", name)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: docflow needs no service account token", name)
	}
	all := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for i, c := range all {
		where := name + "/" + c.Name
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s: wants readOnlyRootFilesystem, no privilege escalation and every capability dropped: %+v", where, sc)
		}
		checkResources(t, where, c.Resources)
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" }) {
			t.Errorf("%s: no writable /tmp on a read-only root filesystem", where)
		}

		// A real command of the docflow binary, the image's entrypoint.
		if len(c.Command) != 0 || len(c.Args) == 0 || !commands[c.Args[0]] {
			t.Errorf("%s: command %v args %v: want args naming a docflow command (%v)", where, c.Command, c.Args, keys(commands))
		}
		if img := c.Image; img != "docflow" && !strings.Contains(img, "/docflow:") {
			t.Errorf("%s: image %q is not docflow's", where, img)
		}

		// Every variable a setting of the catalogue, with a usable value.
		env := map[string]string{}
		for k, v := range cfg {
			env[k] = v
		}
		for _, e := range c.Env {
			checkSetting(t, where, e.Name, e.Value)
			env[e.Name] = e.Value
		}
		for _, from := range c.EnvFrom {
			switch {
			case from.ConfigMapRef != nil:
				if r.configMaps[from.ConfigMapRef.Name] == nil {
					t.Errorf("%s: envFrom ConfigMap %s is not in the output", where, from.ConfigMapRef.Name)
				}
			case from.SecretRef != nil:
				// The base leaves the Secret to an overlay.
				if len(r.secrets) > 0 && r.secrets[from.SecretRef.Name] == nil {
					t.Errorf("%s: envFrom Secret %s is not in the output", where, from.SecretRef.Name)
				}
			default:
				t.Errorf("%s: envFrom neither a ConfigMap nor a Secret", where)
			}
			if from.Prefix != "" {
				t.Errorf("%s: envFrom prefix %q renames the settings", where, from.Prefix)
			}
		}
		if c.Args[0] == "migrate" {
			if c.StartupProbe != nil || c.LivenessProbe != nil || c.ReadinessProbe != nil {
				t.Errorf("%s: a one-shot migration has no probes", where)
			}
			continue
		}
		if i < len(spec.InitContainers) || (c.Args[0] != "api" && c.Args[0] != "worker") {
			t.Errorf("%s: runs docflow %s; on Kubernetes the pods run api and worker, after migrate (no serve, no embedded broker)", where, c.Args[0])
			continue
		}
		checkProbes(t, where, c, env)
		checkWorkdir(t, where, spec, c, env)
	}
	checkTermination(t, name, spec)
}

// checkSetting: name is a setting of docflow.Catalogue() and value one it
// accepts.
func checkSetting(t *testing.T, where, name, value string) {
	t.Helper()
	for _, def := range docflow.Catalogue() {
		if def.Key == name {
			if value != "" {
				if err := docflow.ValidateSettingValue(&def, value); err != nil {
					t.Errorf("%s: %s=%q: %v", where, name, value, err)
				}
			}
			return
		}
	}
	t.Errorf("%s: %s is no setting of docflow (docs/configuration.md)", where, name)
}

func checkResources(t *testing.T, where string, res corev1.ResourceRequirements) {
	t.Helper()
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := res.Requests[n]
		lim, okLim := res.Limits[n]
		if !okReq || !okLim {
			t.Errorf("%s: %s needs a request and a limit (%v, %v)", where, n, res.Requests, res.Limits)
			continue
		}
		if req.Sign() <= 0 || req.Cmp(lim) > 0 {
			t.Errorf("%s: %s request %s above its limit %s", where, n, req.String(), lim.String())
		}
	}
}

// checkProbes: liveness on LivePath, readiness and start-up on ReadyPath,
// each on the container port the command serves them on.
func checkProbes(t *testing.T, where string, c corev1.Container, env map[string]string) {
	t.Helper()
	key := servedBy[c.Args[0]]
	want := listenPort(t, key, env[key])
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{
		{"liveness", c.LivenessProbe, dfhttp.LivePath},
		{"readiness", c.ReadinessProbe, dfhttp.ReadyPath},
		{"startup", c.StartupProbe, dfhttp.ReadyPath},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", where, p.kind)
			continue
		}
		g := p.probe.HTTPGet
		if g.Path != p.path {
			t.Errorf("%s: %s probe asks %s, want %s", where, p.kind, g.Path, p.path)
		}
		port := g.Port.IntVal
		if g.Port.StrVal != "" {
			i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == g.Port.StrVal })
			if i < 0 {
				t.Errorf("%s: %s probe names port %q, which the container does not have", where, p.kind, g.Port.StrVal)
				continue
			}
			port = c.Ports[i].ContainerPort
		}
		if port != want {
			t.Errorf("%s: %s probe on port %d; docflow %s serves it on %d (%s=%s)", where, p.kind, port, c.Args[0], want, key, env[key])
		}
		// A readiness answer takes up to 3 s (the checks' bound).
		if p.path == dfhttp.ReadyPath && p.probe.TimeoutSeconds <= 3 {
			t.Errorf("%s: %s probe times out after %d s, within the checks' own 3 s", where, p.kind, p.probe.TimeoutSeconds)
		}
	}
}

// checkWorkdir: WORKDIR is the shared claim, mounted where the setting
// says.
func checkWorkdir(t *testing.T, where string, spec corev1.PodSpec, c corev1.Container, env map[string]string) {
	t.Helper()
	wd := env[docflow.Workdir.Key()]
	i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == wd })
	if wd == "" || i < 0 {
		t.Errorf("%s: WORKDIR=%q is not a mounted volume", where, wd)
		return
	}
	v := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })
	if v < 0 || spec.Volumes[v].PersistentVolumeClaim == nil || spec.Volumes[v].PersistentVolumeClaim.ClaimName != "docflow-data" {
		t.Errorf("%s: WORKDIR must be the shared claim docflow-data (the stored files every process reads)", where)
	}
}

// checkTermination: the grace period outlasts a preStop pause plus
// docflow's shutdown bound, so a draining process is never killed.
func checkTermination(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	bound := shutdownTimeout(t)
	var pause time.Duration
	for _, c := range spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			if s := c.Lifecycle.PreStop.Sleep; s != nil {
				pause = max(pause, time.Duration(s.Seconds)*time.Second)
			} else {
				t.Errorf("%s/%s: preStop other than a sleep", name, c.Name)
			}
		}
	}
	var grace time.Duration
	if spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
	}
	if grace <= pause+bound {
		t.Errorf("%s: terminationGracePeriodSeconds %v, want above %v (preStop) + %v (docflow's shutdown bound)",
			name, grace, pause, bound)
	}
}

func checkServices(t *testing.T, r *rendered) {
	t.Helper()
	for name, s := range r.services {
		var target *appsv1.Deployment
		for _, d := range r.deployments {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
				target = d
			}
		}
		if target == nil {
			t.Errorf("Service %s selects no Deployment's pods", name)
			continue
		}
		for _, p := range s.Spec.Ports {
			c := target.Spec.Template.Spec.Containers[0]
			if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool {
				return cp.Name == p.TargetPort.StrVal || cp.ContainerPort == p.TargetPort.IntVal
			}) {
				t.Errorf("Service %s: target port %s is no port of %s", name, p.TargetPort.String(), target.Name)
			}
		}
	}
}

// checkBudgets: each Deployment has one budget, whose selector matches its
// pods and no other Deployment's.
func checkBudgets(t *testing.T, r *rendered) {
	t.Helper()
	for dn, d := range r.deployments {
		var covering []string
		for pn, p := range r.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
			if err != nil {
				t.Errorf("PodDisruptionBudget %s: %v", pn, err)
				continue
			}
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				covering = append(covering, pn)
			}
		}
		if len(covering) != 1 {
			t.Errorf("Deployment %s: covered by the budgets %v, want one", dn, covering)
		}
	}
	for pn, p := range r.pdbs {
		if (p.Spec.MaxUnavailable == nil) == (p.Spec.MinAvailable == nil) {
			t.Errorf("PodDisruptionBudget %s: wants one of maxUnavailable and minAvailable", pn)
		}
	}
}

func checkAPIAutoscaler(t *testing.T, r *rendered) {
	t.Helper()
	h := r.hpas["docflow-api"]
	if h == nil {
		t.Fatalf("no HorizontalPodAutoscaler docflow-api: %v", keys(r.hpas))
	}
	ref := h.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.APIVersion != "apps/v1" || r.deployments[ref.Name] == nil || ref.Name != "docflow-api" {
		t.Errorf("HPA docflow-api scales %+v, want the Deployment docflow-api", ref)
	}
	if len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("HPA docflow-api: want CPU as its one metric, got %+v", h.Spec.Metrics)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		t.Errorf("HPA docflow-api: replicas %v..%d, want at least 2", h.Spec.MinReplicas, h.Spec.MaxReplicas)
	}
	if d := r.deployments["docflow-api"]; d.Spec.Replicas != nil {
		t.Errorf("Deployment docflow-api sets replicas, which every apply would put back over the autoscaler's")
	}
}

// checkConfigAndSecrets: the ConfigMap holds settings and no secret; the
// Secret holds settings, each sensitive or a URL that may carry a
// password (DATABASE_URL).
func checkConfigAndSecrets(t *testing.T, r *rendered) {
	t.Helper()
	defs := map[string]docflow.SettingDef{}
	for _, d := range docflow.Catalogue() {
		defs[d.Key] = d
	}
	for name, cm := range r.configMaps {
		for k, v := range cm.Data {
			checkSetting(t, "ConfigMap "+name, k, v)
			if defs[k].Sensitive || k == docflow.DatabaseURL.Key() {
				t.Errorf("ConfigMap %s holds %s, a secret: it belongs in the Secret", name, k)
			}
		}
	}
	for name, s := range r.secrets {
		for k, v := range s.Data {
			checkSetting(t, "Secret "+name, k, string(v))
			if !defs[k].Sensitive && k != docflow.DatabaseURL.Key() {
				t.Errorf("Secret %s holds %s, which is no secret: it belongs in settings.env", name, k)
			}
			if len(bytes.TrimSpace(v)) != 0 {
				t.Errorf("Secret %s: the example gives %s a value; it must hold none", name, k)
			}
		}
		for _, k := range []string{docflow.DatabaseURL.Key(), docflow.SessionSecret.Key(), docflow.MetricsToken.Key()} {
			if _, ok := s.Data[k]; !ok {
				t.Errorf("Secret %s lacks %s, which every deployment needs", name, k)
			}
		}
	}
}

// docflowCommands are the commands cmd/docflow's run accepts: the string
// cases of its switch on the command.
func docflowCommands(t *testing.T) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../cmd/docflow/main.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		sw, ok := n.(*ast.SwitchStmt)
		if !ok {
			return true
		}
		if id, ok := sw.Tag.(*ast.Ident); !ok || id.Name != "cmd" {
			return true
		}
		for _, s := range sw.Body.List {
			for _, e := range s.(*ast.CaseClause).List {
				if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out[v] = true
				}
			}
		}
		return false
	})
	if !out["api"] || !out["worker"] || !out["migrate"] {
		t.Fatalf("commands of cmd/docflow read as %v", keys(out))
	}
	return out
}

// shutdownTimeout is cmd/docflow's shutdownTimeout (N * time.Second).
func shutdownTimeout(t *testing.T) time.Duration {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../cmd/docflow/commands.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	obj := f.Scope.Lookup("shutdownTimeout")
	if obj == nil {
		t.Fatal("cmd/docflow has no const shutdownTimeout")
	}
	spec := obj.Decl.(*ast.ValueSpec)
	b, ok := spec.Values[0].(*ast.BinaryExpr)
	if ok && b.Op == token.MUL {
		lit, okLit := b.X.(*ast.BasicLit)
		sel, okSel := b.Y.(*ast.SelectorExpr)
		if okLit && okSel && sel.Sel.Name == "Second" {
			n, err := strconv.Atoi(lit.Value)
			if err == nil {
				return time.Duration(n) * time.Second
			}
		}
	}
	t.Fatal("shutdownTimeout in cmd/docflow is not written N * time.Second")
	return 0
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
