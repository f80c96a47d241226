package docflow

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

func TestMetricErrorClass(t *testing.T) {
	_, dialErr := net.DialTimeout("tcp", "127.0.0.1:1", time.Second)
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("poll: %w", context.DeadlineExceeded), ErrorClassTimeout},
		{context.Canceled, ErrorClassCanceled},
		{Errorf(EBADGATEWAY, "refused"), ErrorClassRemote},
		{Errorf(EINVALID, "bad"), ErrorClassInvalid},
		{Errorf(EUNAVAILABLE, "off"), ErrorClassUnavailable},
		{dialErr, ErrorClassNetwork},
		{errors.New("other"), ErrorClassError},
	} {
		if got := MetricErrorClass(c.err); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
	m := IntegrationMetric(MetricTypeSMTP, DirectionOut, "mail", time.Now().Add(-time.Second), 10, Errorf(EBADGATEWAY, "no"))
	if m.Kind != MetricIntegration || m.Status != OutcomeFailed || m.ErrorClass != ErrorClassRemote || m.Duration < time.Second || m.Bytes != 10 {
		t.Fatalf("%+v", m)
	}
}
