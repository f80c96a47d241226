package deploy_test

import (
	"strconv"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/streams"
)

// scaledObject is KEDA's ScaledObject (keda.sh/v1alpha1), a custom
// resource with no Go type in k8s.io/api: its spec as KEDA 2's published
// CRD schema (keda.sh_scaledobjects.yaml) declares it, written here so
// that strict decoding refuses a field KEDA does not have. The CRD's
// required fields (scaleTargetRef.name, triggers[].type and .metadata,
// fallback's failureThreshold and replicas, authenticationRef.name) are
// checked by checkScaledObjectSchema, which decoding cannot do.
type scaledObject struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       scaledObjectSpec  `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef        *kedaScaleTarget `json:"scaleTargetRef"`
	PollingInterval       *int32           `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32           `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32           `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32           `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32           `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32           `json:"maxReplicaCount,omitempty"`
	Advanced              *kedaAdvanced    `json:"advanced,omitempty"`
	Triggers              []kedaTrigger    `json:"triggers"`
	Fallback              *kedaFallback    `json:"fallback,omitempty"`
}

type kedaScaleTarget struct {
	Name                   string `json:"name"`
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

type kedaAdvanced struct {
	HorizontalPodAutoscalerConfig *struct {
		Name     string                                         `json:"name,omitempty"`
		Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	} `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              *struct {
		Formula          string `json:"formula,omitempty"`
		Target           string `json:"target,omitempty"`
		ActivationTarget string `json:"activationTarget,omitempty"`
		MetricType       string `json:"metricType,omitempty"`
	} `json:"scalingModifiers,omitempty"`
}

type kedaFallback struct {
	FailureThreshold *int32 `json:"failureThreshold"`
	Replicas         *int32 `json:"replicas"`
	Behavior         string `json:"behavior,omitempty"`
}

type kedaTrigger struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
	MetricType string `json:"metricType,omitempty"`
}

// kafkaScalerKeys are the metadata keys of KEDA's kafka scaler (its
// documentation's parameter list); a misspelt key is ignored by KEDA, so
// the test refuses it.
var kafkaScalerKeys = map[string]bool{
	"bootstrapServers": true, "consumerGroup": true, "topic": true, "lagThreshold": true,
	"activationLagThreshold": true, "offsetResetPolicy": true, "allowIdleConsumers": true,
	"scaleToZeroOnInvalidOffset": true, "excludePersistentLag": true, "limitToPartitionsWithLag": true,
	"ensureEvenDistributionOfPartitions": true, "partitionLimitation": true, "version": true,
	"sasl": true, "tls": true, "unsafeSsl": true,
}

// checkScaledObjectSchema checks what KEDA's CRD requires.
func checkScaledObjectSchema(t *testing.T, name string, so *scaledObject) {
	t.Helper()
	if so.Kind != "ScaledObject" {
		t.Errorf("ScaledObject %s: kind %q", name, so.Kind)
	}
	if so.Spec.ScaleTargetRef == nil || so.Spec.ScaleTargetRef.Name == "" {
		t.Errorf("ScaledObject %s: spec.scaleTargetRef.name is required", name)
	}
	if len(so.Spec.Triggers) == 0 {
		t.Errorf("ScaledObject %s: spec.triggers is required", name)
	}
	for i, tr := range so.Spec.Triggers {
		if tr.Type == "" || tr.Metadata == nil {
			t.Errorf("ScaledObject %s: trigger %d: type and metadata are required", name, i)
		}
		if tr.AuthenticationRef != nil && tr.AuthenticationRef.Name == "" {
			t.Errorf("ScaledObject %s: trigger %d: authenticationRef.name is required", name, i)
		}
	}
	if f := so.Spec.Fallback; f != nil && (f.FailureThreshold == nil || f.Replicas == nil) {
		t.Errorf("ScaledObject %s: fallback needs failureThreshold and replicas", name)
	}
	min, max := int32(1), int32(100) // KEDA's defaults
	if so.Spec.MinReplicaCount != nil {
		min = *so.Spec.MinReplicaCount
	}
	if so.Spec.MaxReplicaCount != nil {
		max = *so.Spec.MaxReplicaCount
	}
	if min > max {
		t.Errorf("ScaledObject %s: minReplicaCount %d above maxReplicaCount %d", name, min, max)
	}
}

// TestKubernetesWorkerAutoscaling: production scales the workers with
// KEDA's kafka scaler, on docflow's own consumer groups and topics (the
// router's and each standard step's), reading the brokers docflow uses;
// the base, for clusters without KEDA, has no ScaledObject.
func TestKubernetesWorkerAutoscaling(t *testing.T) {
	t.Parallel()
	if base := render(t, "base"); len(base.scaledObject) != 0 {
		t.Errorf("the base has ScaledObjects %v: it must apply on a cluster without KEDA", keys(base.scaledObject))
	}
	r := render(t, "overlays/production")
	so := r.scaledObject["docflow-worker"]
	if so == nil || len(r.scaledObject) != 1 {
		t.Fatalf("ScaledObjects %v, want docflow-worker", keys(r.scaledObject))
	}
	checkScaledObjectSchema(t, "docflow-worker", so)
	settings := r.settings(t, "docflow-config")

	ref := so.Spec.ScaleTargetRef
	if ref.Name != "docflow-worker" || r.deployments[ref.Name] == nil ||
		(ref.Kind != "" && ref.Kind != "Deployment") || (ref.APIVersion != "" && ref.APIVersion != "apps/v1") {
		t.Errorf("ScaledObject scales %+v, want the Deployment docflow-worker", ref)
	}
	if r.deployments["docflow-worker"].Spec.Replicas != nil {
		t.Error("Deployment docflow-worker sets replicas, which every apply would put back over KEDA's")
	}

	// The groups a worker reads the pipeline with, each on its topic.
	want := map[string]string{pipeline.RouterGroup: streams.TopicFilesIngested}
	for _, s := range docflow.StandardSteps {
		want[pipeline.StepGroup(s)] = streams.StepTopic(s)
	}
	brokers := settings[docflow.KafkaBrokers.Key()]
	if brokers == "" {
		t.Fatal("production sets no KAFKA_BROKERS: it would need the embedded broker")
	}
	for i, tr := range so.Spec.Triggers {
		md := tr.Metadata
		where := "trigger " + strconv.Itoa(i) + " (" + tr.Name + ")"
		if tr.Type != "kafka" {
			t.Errorf("%s: type %q, want kafka", where, tr.Type)
			continue
		}
		for k := range md {
			if !kafkaScalerKeys[k] {
				t.Errorf("%s: %q is no parameter of KEDA's kafka scaler", where, k)
			}
		}
		for _, k := range []string{"bootstrapServers", "consumerGroup", "topic", "lagThreshold"} {
			if md[k] == "" {
				t.Errorf("%s: %s is not set", where, k)
			}
		}
		if md["bootstrapServers"] != brokers {
			t.Errorf("%s: bootstrapServers %q, but docflow's KAFKA_BROKERS is %q", where, md["bootstrapServers"], brokers)
		}
		topic, ok := want[md["consumerGroup"]]
		switch {
		case !ok:
			t.Errorf("%s: consumer group %q is none of docflow's pipeline groups", where, md["consumerGroup"])
		case md["topic"] != topic:
			t.Errorf("%s: group %s reads %s, not %s", where, md["consumerGroup"], topic, md["topic"])
		}
		delete(want, md["consumerGroup"])
		if n, err := strconv.Atoi(md["lagThreshold"]); err != nil || n <= 0 {
			t.Errorf("%s: lagThreshold %q is not a positive count", where, md["lagThreshold"])
		}
		// docflow's consumers start a new group at the first offset; a
		// scaler reading from the latest would see no lag.
		if md["offsetResetPolicy"] != "earliest" {
			t.Errorf("%s: offsetResetPolicy %q, want earliest as docflow's consumers", where, md["offsetResetPolicy"])
		}
	}
	if len(want) != 0 {
		t.Errorf("no trigger for the groups %v", keys(want))
	}

	// More workers than a topic's partitions get none of its partitions.
	parts := streams.DefaultPartitions
	if v := settings[docflow.KafkaPartitions.Key()]; v != "" {
		var err error
		if parts, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	if so.Spec.MaxReplicaCount == nil || int(*so.Spec.MaxReplicaCount) > parts {
		t.Errorf("maxReplicaCount %v, want at most KAFKA_PARTITIONS (%d)", so.Spec.MaxReplicaCount, parts)
	}
	// As many as the disruption budget lets go at once, and one more.
	if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount < 2 {
		t.Errorf("minReplicaCount %v, want at least 2", so.Spec.MinReplicaCount)
	}

	// Production runs against external stores, not the base's in-namespace
	// names.
	for _, k := range []string{docflow.KafkaBrokers.Key(), docflow.ElasticsearchURL.Key(), docflow.ClickHouseURL.Key()} {
		if v := settings[k]; v == "" || strings.Contains(v, "//kafka:") || strings.HasPrefix(v, "kafka:") ||
			strings.Contains(v, "//elasticsearch:") || strings.Contains(v, "//clickhouse:") {
			t.Errorf("production %s=%q: want the external service's address", k, v)
		}
	}
}
