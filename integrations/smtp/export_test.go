package smtp

// SetImplicitTLSPort makes port speak TLS from the start, as 465 does.
func (m *Mailer) SetImplicitTLSPort(port int) { m.implicitTLS = port }
