package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// loadOptions are the flags of the load and soak sections.
type loadOptions struct {
	duration time.Duration // the load's run at the highest rate held
	step     time.Duration // each step of the search for that rate
	start    float64       // the first step's rate
	p99      time.Duration // bound of a step's p99 over every route
	docs     int           // documents seeded

	soakDuration time.Duration
	soakEvery    time.Duration // a row of the soak's table every so often
	soakRate     float64
	soakKeep     time.Duration // how long an uploaded document is kept; 0 = for good
}

// soakBrokerRetention is the retention of the soak server's embedded
// broker, so that its log (and the index of it the broker keeps in
// memory) is at its steady size early in the soak rather than after the
// default week.
const soakBrokerRetention = "10m"

// loadStepFactor is the growth of the offered rate from one step to the
// next.
const loadStepFactor = 1.25

// stepHolds says whether a step of the search held: at most 1 % of its
// requests failed or were not sent, at least 95 % of the offered rate
// was answered, and the p99 over every route is within the bound.
func stepHolds(res mixResult, bound time.Duration) (bool, string) {
	sent := res.ok() + res.errors()
	switch {
	case sent == 0:
		return false, "nothing sent"
	case float64(res.errors()) > 0.01*float64(sent):
		return false, fmt.Sprintf("%d of %d requests failed", res.errors(), sent)
	case res.achieved() < 0.95*res.Rate:
		return false, fmt.Sprintf("answered %.1f/s of %.0f/s", res.achieved(), res.Rate)
	case res.p(0.99) > bound:
		return false, fmt.Sprintf("p99 %.0f ms over %.0f ms", millis(res.p(0.99)), millis(bound))
	}
	return true, ""
}

// benchLoad finds the highest rate of the mixed workload the machine holds
// (the offered rate grows by a quarter every step until a step does not
// hold, see stepHolds), then runs the mix at that rate for the load
// duration and reports each route's p50 and p99, count and errors.
func benchLoad(ctx context.Context, r *Report, o *options) error {
	const section = "load"
	lo := o.load
	e, err := newMixEnv(ctx, o, "load", lo.docs)
	if err != nil {
		return err
	}
	defer e.close()
	infoLine(r, section, "seeded", fmt.Sprintf("%12d documents of %d users (database and search index) in %.0f s",
		lo.docs, mixUsers, e.seeded.Seconds()))
	smp, err := newSampler(ctx, e.s, e.dbURL)
	if err != nil {
		return err
	}
	defer smp.close()
	// Connections, caches and the first documents' pipeline runs.
	e.mixer.run(ctx, lo.start, 10*time.Second, 1)

	// Up by a quarter while a step holds; should the first not hold, down
	// by half until one does.
	best := 0.0
	seed := uint64(2)
	infoLine(r, section, "each step's p99 by route, ms", routeNames())
	for rate := lo.start; rate >= 1 && rate <= 5000 && ctx.Err() == nil; {
		res := e.mixer.run(ctx, rate, lo.step, seed)
		seed++
		ok, why := stepHolds(res, lo.p99)
		sm, _ := smp.sample(ctx)
		verdict := "held"
		if !ok {
			verdict = "did not hold: " + why
		}
		infoLine(r, section, fmt.Sprintf("step %.0f/s for %s", rate, lo.step),
			fmt.Sprintf("answered %.1f/s, p99 %.1f ms (%s), %d errors, load %.1f, %d runs unfinished: %s",
				res.achieved(), millis(res.p(0.99)), res.routeP99s(), res.errors(), res.Load1, sm.Unfinished, verdict))
		switch {
		case ok:
			best = rate
			rate = float64(int(rate*loadStepFactor + 0.5))
		case best == 0:
			rate = float64(int(rate / 2))
		default:
			rate = 0
		}
		if !ok && best > 0 {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if best == 0 {
		return fmt.Errorf("not even 1 request a second held")
	}
	r.Add(Row{Section: section, Name: fmt.Sprintf("highest rate of the mix held (steps of %s, x%.2f)", lo.step, loadStepFactor),
		Value: best, Unit: "req/s", Target: "info", Pass: true})

	// The run at that rate, a line a minute.
	var all mixResult
	window := min(time.Minute, lo.duration)
	for t := time.Duration(0); t < lo.duration && ctx.Err() == nil; t += window {
		res := e.mixer.run(ctx, best, min(window, lo.duration-t), seed)
		seed++
		all.merge(res)
		sm, _ := smp.sample(ctx)
		infoLine(r, section, fmt.Sprintf("  minute %d", int(t/time.Minute)+1),
			fmt.Sprintf("answered %.1f/s, p99 %.1f ms, %d errors, load %.1f, RSS %.0f MiB, %d runs unfinished",
				res.achieved(), millis(res.p(0.99)), res.errors(), res.Load1, sm.RSSMiB, sm.Unfinished))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	printMix(r, section, fmt.Sprintf("%.0f req/s for %s", best, lo.duration), all)
	r.Ratio(section, fmt.Sprintf("answered rate over %s at %.0f req/s", lo.duration, best), all.achieved(), best, "req/s", 0.97)
	r.AtMost(section, "p99 of every route together", millis(all.p(0.99)), "ms", millis(lo.p99))
	sent := all.ok() + all.errors()
	r.AtMost(section, fmt.Sprintf("requests failed or not sent (%d of %d)", all.errors(), sent), 100*float64(all.errors())/float64(max(sent, 1)), "%", 1)
	return nil
}

// Growth beyond noise over a soak: the median of the last interval's
// samples against the highest sample of the first interval after the
// warm-up; a resource grew when the difference exceeds both the relative
// and the absolute allowance.
var soakAllowance = map[string]struct{ rel, abs float64 }{
	"RSS MiB":    {0.20, 32},
	"goroutines": {0.10, 50},
	"open files": {0.10, 20},
	"sockets":    {0.10, 20},
	"PG conns":   {0.25, 4},
}

// soakResources are the resources a soak judges, in its table's order.
var soakResources = []string{"RSS MiB", "goroutines", "open files", "sockets", "PG conns"}

func (s procSample) values() map[string]float64 {
	return map[string]float64{"RSS MiB": s.RSSMiB, "goroutines": float64(s.Goroutines), "open files": float64(s.FDs),
		"sockets": float64(s.Sockets), "PG conns": float64(s.PGConns)}
}

// benchSoak runs the mix at a moderate rate for the soak's duration and
// samples the server process every 30 s: resident memory, goroutines
// (go_goroutines of its /metrics), open files (/proc/<pid>/fd) and its
// database's connections (pg_stat_activity). It prints a row at the
// start (after a minute's warm-up), every soakEvery and at the end,
// then whether each grew beyond noise (soakAllowance). The documents its
// uploads make are deleted soakKeep later (retirer), so that the corpus
// keeps its size, and the embedded broker keeps its messages
// soakBrokerRetention: what grows is then what the server holds on to. It saves the
// server's heap profile (DEBUG_PPROF_ADDR) at the start, at each row and
// at the end, and prints where the live heap grew from start to end.
func benchSoak(ctx context.Context, r *Report, o *options) error {
	const section = "soak"
	lo := o.load
	pprofAddr, err := freePort()
	if err != nil {
		return err
	}
	e, err := newMixEnv(ctx, o, "soak", lo.docs, "DEBUG_PPROF_ADDR="+pprofAddr, "BROKER_RETENTION="+soakBrokerRetention)
	if err != nil {
		return err
	}
	defer e.close()
	var ret *retirer
	retStop := make(chan struct{})
	var retDone sync.WaitGroup
	if lo.soakKeep > 0 {
		ret = &retirer{m: e.mixer, keep: lo.soakKeep}
		e.mixer.uploaded = ret.add
		retDone.Go(func() { ret.run(ctx, retStop) })
	}
	defer func() { close(retStop); retDone.Wait() }()
	heap := heapProfiler{addr: pprofAddr, dir: o.workdir + "/soak"}
	smp, err := newSampler(ctx, e.s, e.dbURL)
	if err != nil {
		return err
	}
	defer smp.close()
	e.mixer.run(ctx, lo.soakRate, time.Minute, 1)

	var mu sync.Mutex
	var samples []procSample
	var sampleErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	take := func() {
		s, err := smp.sample(ctx)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			sampleErr = err
			return
		}
		samples = append(samples, s)
	}
	begin := time.Now()
	take()
	startHeap, err := heap.save(ctx, "start")
	if err != nil {
		return err
	}
	wg.Go(func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				take()
			}
		}
	})
	row := func(label string, s procSample) {
		infoLine(r, section, label, fmt.Sprintf("%12.0f %10d %10d %8d %8d %10d %6.1f", s.RSSMiB, s.Goroutines, s.FDs, s.Sockets, s.PGConns, s.Unfinished, s.Load1))
	}
	infoLine(r, section, fmt.Sprintf("%.0f req/s of the mix for %s", lo.soakRate, lo.soakDuration), soakHeader)
	mu.Lock()
	row("start", samples[0])
	mu.Unlock()
	var all mixResult
	seed := uint64(2)
	labels := []string{"start"}
	rows := []procSample{samples[0]}
	for t := time.Duration(0); t < lo.soakDuration && ctx.Err() == nil; t += lo.soakEvery {
		res := e.mixer.run(ctx, lo.soakRate, min(lo.soakEvery, lo.soakDuration-t), seed)
		seed++
		all.merge(res)
		take()
		mu.Lock()
		last := samples[len(samples)-1]
		mu.Unlock()
		label := time.Since(begin).Round(time.Second).String()
		if _, err := heap.save(ctx, label); err != nil && ctx.Err() == nil {
			infoLine(r, section, "heap profile at "+label, err.Error())
		}
		labels, rows = append(labels, label), append(rows, last)
		note := ""
		if ret != nil {
			note = ", documents " + ret.summary()
		}
		row(fmt.Sprintf("%s (answered %.1f/s, p99 %.0f ms, %d errors%s)", label, res.achieved(), millis(res.p(0.99)), res.errors(), note), last)
	}
	close(stop)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if sampleErr != nil {
		return fmt.Errorf("sampling the server: %w", sampleErr)
	}
	endHeap, err := heap.save(ctx, "end")
	if err != nil {
		return err
	}
	printMix(r, section, fmt.Sprintf("%.0f req/s for %s", lo.soakRate, lo.soakDuration), all)
	if ret != nil {
		infoLine(r, section, fmt.Sprintf("uploaded documents deleted %s later", lo.soakKeep), ret.summary())
	}
	infoLine(r, section, "the server over the soak", soakHeader)
	for i, s := range rows {
		row("  "+labels[i], s)
	}
	heap.diff(r, section, startHeap, endHeap)

	// The first interval's highest sample against the last interval's
	// median.
	first, last := samplesWithin(samples, begin, begin.Add(lo.soakEvery)), samplesWithin(samples, begin.Add(lo.soakDuration-lo.soakEvery), time.Now())
	for _, name := range soakResources {
		a := soakAllowance[name]
		var hi float64
		for _, s := range first {
			hi = max(hi, s.values()[name])
		}
		var ends []float64
		for _, s := range last {
			ends = append(ends, s.values()[name])
		}
		end := median(ends)
		bound := hi + max(a.rel*hi, a.abs)
		r.Add(Row{Section: section, Name: fmt.Sprintf("%s: last interval's median (first interval's highest %.0f)", name, hi),
			Value: end, Unit: "", Target: fmt.Sprintf("<= %.0f (+%.0f%%, at least +%.0f)", bound, 100*a.rel, a.abs), Pass: end <= bound})
	}
	return nil
}

// soakHeader names the columns of the soak's table.
const soakHeader = "     RSS MiB goroutines open files  sockets PG conns unfinished   load"

// samplesWithin are the samples taken from a until b.
func samplesWithin(s []procSample, a, b time.Time) []procSample {
	var out []procSample
	for _, x := range s {
		if !x.At.Before(a) && !x.At.After(b) {
			out = append(out, x)
		}
	}
	return out
}
