package streams

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
)

// BrokerConfig configures the embedded Kafka-protocol broker.
type BrokerConfig struct {
	// DataDir keeps topics, messages and committed offsets across restarts
	// (a directory under WORKDIR). Empty = memory only: everything is lost
	// on Close, and docflow's start-up recovery re-publishes unfinished work.
	DataDir string
	// Port to listen on at 127.0.0.1; 0 picks a free port. A fixed port lets
	// clients reconnect to a restarted broker.
	Port int
	// Partitions of auto-created topics; 0 = DefaultPartitions. Topics are
	// normally created by EnsureTopics.
	Partitions int
	// SyncWrites fsyncs every produced batch (slower, survives power loss).
	SyncWrites bool
	// MinSessionTimeout lowers the smallest consumer-group session timeout
	// the broker accepts (tests); 0 keeps the broker default (6 s).
	MinSessionTimeout time.Duration
	// Retention is how long a message is kept (Kafka's log.retention.ms);
	// 0 = DefaultRetention. Messages are consumed within seconds, what
	// they carry is recorded in PostgreSQL, and start-up recovery
	// publishes unfinished work again, so the log is only a window: without a bound it and the broker's in-memory index of it
	// (about 72 bytes a record batch) grow for as long as the process
	// lives.
	Retention time.Duration
	Log       zerolog.Logger
}

// DefaultRetention is how long the embedded broker keeps a message by
// default: Kafka's own default, 7 days.
const DefaultRetention = 7 * 24 * time.Hour

// retentionEvery is how often the embedded broker drops what is past
// its retention: the retention's tenth, between a second and ten
// minutes.
func retentionEvery(r time.Duration) time.Duration {
	return min(max(r/10, time.Second), 10*time.Minute)
}

// Broker is the embedded single-node broker (franz-go's kfake), used when
// KAFKA_BROKERS is empty and by `docflow broker`. It speaks the Kafka
// protocol, so the same kafka-go producer and consumer talk to it.
type Broker struct {
	cfg BrokerConfig

	mu      sync.Mutex
	cluster *kfake.Cluster
	stop    chan struct{} // ends the retention loop of the running cluster
	done    chan struct{} // closed when that loop has ended
}

// NewBroker returns a broker that is not started yet.
func NewBroker(cfg BrokerConfig) *Broker { return &Broker{cfg: cfg} }

// Start listens and, with a DataDir, reloads the persisted state.
func (b *Broker) Start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cluster != nil {
		return errors.New("start broker: already started")
	}
	parts := b.cfg.Partitions
	if parts <= 0 {
		parts = DefaultPartitions
	}
	retention := b.cfg.Retention
	if retention <= 0 {
		retention = DefaultRetention
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(parts),
		kfake.WithLogger(kfakeLogger{b.cfg.Log}),
		kfake.BrokerConfigs(map[string]string{"log.retention.ms": strconv.FormatInt(retention.Milliseconds(), 10)}),
	}
	if b.cfg.Port != 0 {
		opts = append(opts, kfake.Ports(b.cfg.Port))
	}
	if b.cfg.DataDir != "" {
		opts = append(opts, kfake.DataDir(b.cfg.DataDir))
	}
	if b.cfg.SyncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	if b.cfg.MinSessionTimeout > 0 {
		opts = append(opts, kfake.GroupMinSessionTimeout(b.cfg.MinSessionTimeout))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	b.cluster = c
	// NOTE: kfake applies the broker's retention on its own only to topics
	// given a retention of their own, so the broker applies it.
	b.stop, b.done = make(chan struct{}), make(chan struct{})
	go applyRetention(c, retentionEvery(retention), b.stop, b.done)
	b.cfg.Log.Info().Strs("addrs", c.ListenAddrs()).Str("data_dir", b.cfg.DataDir).Msg("embedded broker started")
	return nil
}

// Addrs returns the listening host:port addresses (empty before Start).
func (b *Broker) Addrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cluster == nil {
		return nil
	}
	return b.cluster.ListenAddrs()
}

// Cluster exposes the kfake cluster for fault injection in tests
// (ControlKey); nil before Start.
func (b *Broker) Cluster() *kfake.Cluster {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cluster
}

// Close stops listening and, with a DataDir, saves the state to disk. The
// broker can be started again afterwards (on the same Port to keep clients).
func (b *Broker) Close() {
	b.mu.Lock()
	c, stop, done := b.cluster, b.stop, b.done
	b.cluster, b.stop, b.done = nil, nil, nil
	b.mu.Unlock()
	if c != nil {
		// The loop ends first: a pass it began needs the cluster running.
		close(stop)
		<-done
		c.Close()
	}
}

// applyRetention drops the messages of c past its retention every so
// often, until stop is closed; then it closes done.
func applyRetention(c *kfake.Cluster, every time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.ApplyRetention()
		}
	}
}

type kfakeLogger struct{ log zerolog.Logger }

func (l kfakeLogger) Logf(level kfake.LogLevel, msg string, args ...any) {
	var ev *zerolog.Event
	switch level {
	case kfake.LogLevelError:
		ev = l.log.Error()
	case kfake.LogLevelWarn:
		ev = l.log.Warn()
	case kfake.LogLevelInfo:
		ev = l.log.Debug() // kfake logs every request at info
	default:
		ev = l.log.Trace()
	}
	ev.Str("component", "broker").Msgf(msg, args...)
}
