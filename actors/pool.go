package actors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
)

// Pool errors.
var (
	// ErrTimeout is the result of a job that ran past its timeout.
	ErrTimeout = errors.New("job timed out")
	// ErrPoolClosed is returned by Submit after Close started, and is the
	// result of jobs still queued when Close gave up waiting.
	ErrPoolClosed = errors.New("pool closed")
)

// WorkFunc does one job on a pool actor. It must honour ctx: ctx is
// cancelled at the job's timeout and when Close stops waiting.
type WorkFunc[M, R any] func(ctx context.Context, msg M) (R, error)

// Job is one unit of work for a Pool.
type Job[M, R any] struct {
	ID      string        // correlation id, echoed in the Result
	Msg     M             // handed to the WorkFunc
	Timeout time.Duration // 0 = the pool's JobTimeout
	// The result goes to ReplyTo as a Result[R] message (for actors: no
	// blocking Request inside an actor), else to Done, called on a pool
	// goroutine (it must not block). One of them is required.
	ReplyTo *actor.PID
	Done    func(Result[R])
}

// Result is the outcome of a job.
type Result[R any] struct {
	ID       string
	Value    R
	Err      error // ErrTimeout (wrapped), ErrPoolClosed, a *PanicError or the work's error
	Duration time.Duration
	Worker   string // the worker actor's id
}

// PoolConfig configures a Pool.
type PoolConfig struct {
	// Kind names the worker actors (kind/0, kind/1, …); unique per engine.
	Kind string
	// Size is the number of worker actors, each running one job at a time.
	Size int
	// JobTimeout bounds each job unless the job sets its own; 0 = none.
	JobTimeout time.Duration
	Log        zerolog.Logger
}

// PoolStats is a snapshot of a pool's load.
type PoolStats struct {
	Size      int
	Busy      int   // workers running a job
	Queued    int   // jobs waiting for a worker
	Abandoned int64 // timed-out jobs whose work had not returned when reported
}

// Pool is a kind of Size recovered hollywood actors that take jobs by
// message. Submit sends a job to an idle actor (or queues it until one is
// idle); the actor does the job in its receive, one job at a time, in
// submission order, and the result goes to the job's ReplyTo or Done.
//
// A job without a timeout runs on the actor itself (no hand-off); one with a
// timeout runs under RunTimed. Every job ends with exactly one Result: its
// value or error, a *PanicError when the work panicked (the panic never
// reaches hollywood), ErrTimeout when it ran past its timeout (its context
// is cancelled; a job that ignores it is abandoned, so the actor takes the
// next job at once), or ErrPoolClosed.
//
// NOTE: Submit never blocks and the queue is unbounded, as hollywood's
// inboxes are: the producer of jobs bounds them (the Kafka consumer's
// in-flight budget does for the pipeline), so the pool size is the one
// bound on jobs running.
type Pool[M, R any] struct {
	e    *actor.Engine
	cfg  PoolConfig
	log  zerolog.Logger
	work WorkFunc[M, R]

	ctx    context.Context // cancelled (cause ErrPoolClosed) when Close stops waiting
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	workers   []*actor.PID
	idle      []int // indexes of idle workers
	queue     []*dispatch[M, R]
	busy      int
	closed    bool
	abandoned int64
	drained   chan struct{} // closed when closed && queue empty && busy == 0
}

// workerInbox is a worker's initial inbox (hollywood grows a full one): it
// holds one job at a time and its lifecycle messages, and the default of
// 1024 slots would cost 24 KiB per actor.
const workerInbox = 8

// NewPool spawns the workers on e.
func NewPool[M, R any](e *actor.Engine, cfg PoolConfig, work WorkFunc[M, R]) (*Pool[M, R], error) {
	switch {
	case e == nil:
		return nil, errors.New("new pool: nil engine")
	case work == nil:
		return nil, errors.New("new pool: nil work func")
	case cfg.Kind == "":
		return nil, errors.New("new pool: empty kind")
	case cfg.Size <= 0:
		return nil, fmt.Errorf("new pool %s: size %d", cfg.Kind, cfg.Size)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	p := &Pool[M, R]{
		e: e, cfg: cfg, work: work,
		log:     cfg.Log.With().Str("pool", cfg.Kind).Logger(),
		ctx:     ctx,
		cancel:  cancel,
		drained: make(chan struct{}),
	}
	for i := range cfg.Size {
		pid := e.Spawn(func() actor.Receiver { return &worker[M, R]{p: p, idx: i} }, cfg.Kind,
			SpawnOpts(p.log, actor.WithID(strconv.Itoa(i)), actor.WithInboxSize(workerInbox))...)
		p.workers = append(p.workers, pid)
		p.idle = append(p.idle, i)
	}
	return p, nil
}

// Submit queues job. It returns ErrPoolClosed once Close has started, and an
// error when the job has nowhere to send its result.
func (p *Pool[M, R]) Submit(job Job[M, R]) error {
	if job.ReplyTo == nil && job.Done == nil {
		return fmt.Errorf("submit %s: no ReplyTo and no Done", job.ID)
	}
	d := &dispatch[M, R]{job: job, p: p}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrPoolClosed
	}
	if len(p.idle) == 0 {
		p.queue = append(p.queue, d)
		p.mu.Unlock()
		return nil
	}
	w := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	p.busy++
	pid := p.workers[w]
	p.mu.Unlock()
	p.e.Send(pid, d)
	return nil
}

// Stats returns the pool's current load.
func (p *Pool[M, R]) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PoolStats{Size: len(p.workers), Busy: p.busy, Queued: len(p.queue), Abandoned: p.abandoned}
}

// Close stops accepting jobs, waits until the queued and running jobs are
// done or ctx ends (then running jobs are cancelled and queued ones end with
// ErrPoolClosed), and stops the workers. It returns ctx's error when it had
// to cut the drain short.
func (p *Pool[M, R]) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.checkDrained()
	}
	p.mu.Unlock()

	var err error
	select {
	case <-p.drained:
	case <-ctx.Done():
		err = fmt.Errorf("close pool %s: %w", p.cfg.Kind, ctx.Err())
		p.mu.Lock()
		queued := p.queue
		p.queue = nil
		p.mu.Unlock()
		for _, d := range queued {
			d.finish(Result[R]{ID: d.job.ID, Err: ErrPoolClosed}, false)
		}
	}
	p.cancel(ErrPoolClosed) // running jobs (if any are left) see their context cancelled
	// Poison after the drain so that no job message is behind the pill.
	stopCtx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	for _, pid := range p.workers {
		<-p.e.PoisonCtx(stopCtx, pid).Done()
	}
	return err
}

// checkDrained closes drained when the pool is closed and idle; p.mu held.
func (p *Pool[M, R]) checkDrained() {
	if p.closed && p.busy == 0 && len(p.queue) == 0 {
		select {
		case <-p.drained:
		default:
			close(p.drained)
		}
	}
}

// release hands worker w the next queued job or marks it idle.
func (p *Pool[M, R]) release(w int) {
	p.mu.Lock()
	if len(p.queue) > 0 {
		d := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		pid := p.workers[w]
		p.mu.Unlock()
		p.e.Send(pid, d)
		return
	}
	p.busy--
	p.idle = append(p.idle, w)
	p.checkDrained()
	p.mu.Unlock()
}

// dispatch carries one job to a worker.
type dispatch[M, R any] struct {
	job  Job[M, R]
	p    *Pool[M, R]
	once sync.Once
	w    int // the worker running it, -1 when none
}

// Fail implements Failer: a panic in the worker's receive ends the job.
func (d *dispatch[M, R]) Fail(err error) {
	d.finish(Result[R]{ID: d.job.ID, Err: err}, true)
}

// finish delivers the result once and, when a worker ran the job, frees it.
func (d *dispatch[M, R]) finish(res Result[R], freeWorker bool) {
	d.once.Do(func() {
		d.deliver(res)
		if freeWorker {
			d.p.release(d.w)
		}
	})
}

func (d *dispatch[M, R]) deliver(res Result[R]) {
	defer func() {
		if v := recover(); v != nil {
			perr := NewPanicError(v)
			d.p.log.Error().Str("job", d.job.ID).Str("panic", fmt.Sprint(v)).Str("stack", string(perr.Stack)).Msg("job result callback panicked")
		}
	}()
	if d.job.ReplyTo != nil {
		d.p.e.Send(d.job.ReplyTo, res)
		return
	}
	d.job.Done(res)
}

// worker is one actor of the pool.
type worker[M, R any] struct {
	p   *Pool[M, R]
	idx int
}

func (w *worker[M, R]) Receive(c *actor.Context) {
	d, ok := c.Message().(*dispatch[M, R])
	if !ok {
		return // Initialized, Started, Stopped
	}
	d.w = w.idx
	res := w.run(d.job)
	res.Worker = c.PID().ID
	d.finish(res, true)
}

// run does the job: inline when it has no timeout (a panic becomes a
// *PanicError), else under RunTimed.
func (w *worker[M, R]) run(job Job[M, R]) Result[R] {
	timeout := job.Timeout
	if timeout <= 0 {
		timeout = w.p.cfg.JobTimeout
	}
	if timeout <= 0 {
		return w.runInline(job)
	}
	t := RunTimed(w.p.ctx, timeout, func(ctx context.Context) (R, error) { return w.p.work(ctx, job.Msg) })
	var perr *PanicError
	if errors.As(t.Err, &perr) {
		w.p.log.Error().Str("job", job.ID).Str("panic", fmt.Sprint(perr.Value)).Str("stack", string(perr.Stack)).Msg("job panicked")
	}
	if t.Abandoned {
		// NOTE: the work ignored its context; it is reported at once and its
		// goroutine abandoned rather than hold the worker (and its
		// partition) hostage.
		w.p.mu.Lock()
		w.p.abandoned++
		w.p.mu.Unlock()
		w.p.log.Warn().Str("job", job.ID).Err(t.Err).Msg("job abandoned")
	}
	return Result[R]{ID: job.ID, Value: t.Value, Err: t.Err, Duration: t.Duration}
}

// runInline does an untimed job on the worker's own goroutine: no hand-off.
func (w *worker[M, R]) runInline(job Job[M, R]) (res Result[R]) {
	start := time.Now()
	defer func() {
		if v := recover(); v != nil {
			perr := NewPanicError(v)
			w.p.log.Error().Str("job", job.ID).Str("panic", fmt.Sprint(v)).Str("stack", string(perr.Stack)).Msg("job panicked")
			res = Result[R]{ID: job.ID, Err: perr, Duration: time.Since(start)}
		}
	}()
	v, err := w.p.work(w.p.ctx, job.Msg)
	return Result[R]{ID: job.ID, Value: v, Err: err, Duration: time.Since(start)}
}
