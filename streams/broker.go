package streams

import (
	"errors"
	"fmt"
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
	Log               zerolog.Logger
}

// Broker is the embedded single-node broker (franz-go's kfake), used when
// KAFKA_BROKERS is empty and by `docflow broker`. It speaks the Kafka
// protocol, so the same kafka-go producer and consumer talk to it.
type Broker struct {
	cfg BrokerConfig

	mu      sync.Mutex
	cluster *kfake.Cluster
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
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.DefaultNumPartitions(parts),
		kfake.WithLogger(kfakeLogger{b.cfg.Log}),
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
	c := b.cluster
	b.cluster = nil
	b.mu.Unlock()
	if c != nil {
		c.Close()
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
