package docflow

import (
	"context"
	"errors"
	"net"
	"time"
)

// Directions of a MetricIntegration: in for what docflow takes from an
// integration (a mailbox poll), out for what it sends (an upload, a mail, a
// notification).
const (
	DirectionIn  = "in"
	DirectionOut = "out"
)

// Types of a MetricIntegration that are not configured integrations (those
// use their integration type: imap, webdav, s3…).
const (
	MetricTypeIMAP   = "imap"   // a mailbox poll of an IMAP source
	MetricTypeSMTP   = "smtp"   // one mail sent through the SMTP settings
	MetricTypeNotify = "notify" // one admin notification through one channel
	MetricTypeLocal  = "local"  // one delivery into the local destination folder
)

// Error classes of a failed integration operation (MetricErrorClass).
const (
	ErrorClassTimeout     = "timeout"
	ErrorClassNetwork     = "network"
	ErrorClassInvalid     = "invalid"
	ErrorClassUnavailable = "unavailable"
	ErrorClassRemote      = "remote" // the other side refused (bad_gateway)
	ErrorClassCanceled    = "canceled"
	ErrorClassError       = "error"
)

// MetricErrorClass names the kind of an integration error for the
// dashboards' top error classes: a few stable words, never the message
// (which may hold addresses or names). nil gives "".
func MetricErrorClass(err error) string {
	if err == nil {
		return ""
	}
	var nerr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrorClassTimeout
	case errors.Is(err, context.Canceled):
		return ErrorClassCanceled
	}
	switch ErrorCode(err) {
	case ETIMEOUT:
		return ErrorClassTimeout
	case EINVALID:
		return ErrorClassInvalid
	case EUNAVAILABLE:
		return ErrorClassUnavailable
	case EBADGATEWAY:
		return ErrorClassRemote
	}
	if errors.As(err, &nerr) {
		if nerr.Timeout() {
			return ErrorClassTimeout
		}
		return ErrorClassNetwork
	}
	return ErrorClassError
}

// IntegrationMetric is the MetricIntegration of one operation that began at
// start and ended now with err: typ is the integration type, dir a
// Direction*, target which integration (its id, or a channel's kind), bytes
// what it moved.
func IntegrationMetric(typ, dir, target string, start time.Time, bytes int64, err error) Metric {
	now := time.Now()
	m := Metric{Kind: MetricIntegration, Time: now, Type: typ, Direction: dir, Target: target,
		Status: OutcomeOK, Duration: now.Sub(start), Bytes: bytes}
	if err != nil {
		m.Status, m.ErrorClass = OutcomeFailed, MetricErrorClass(err)
	}
	return m
}
