package steps

import (
	"context"
	"os"
	"time"

	"docflow"
)

// MeasuredDestinations wraps dests so that every delivery is one
// integration metric on rec: type the destination's provider, direction
// out, target its name, the file's size when delivered, outcome and
// duration (a retried step measures each delivery again). A nil rec
// returns dests unchanged.
func MeasuredDestinations(dests Destinations, rec docflow.Recorder) Destinations {
	if rec == nil || dests == nil {
		return dests
	}
	return func(ctx context.Context, f *docflow.File) ([]Destination, error) {
		ds, err := dests(ctx, f)
		for i, d := range ds {
			ds[i] = measured{Destination: d, rec: rec}
		}
		return ds, err
	}
}

type measured struct {
	Destination
	rec docflow.Recorder
}

func (m measured) Deliver(ctx context.Context, f *docflow.File, path, name string) (string, error) {
	start := time.Now()
	remote, err := m.Destination.Deliver(ctx, f, path, name)
	var size int64
	if err == nil {
		if st, serr := os.Stat(path); serr == nil {
			size = st.Size()
		}
	}
	m.rec.Record(docflow.IntegrationMetric(m.Provider(), docflow.DirectionOut, m.Name(), start, size, err))
	return remote, err
}
