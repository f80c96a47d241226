package http

import "docflow"

// The documentation of the analytics, metrics, notification, cloud folder
// and mobile device routes (/openapi.json).

// analyticsParams are the query of every /api/analytics/* route.
var analyticsParams = []Param{
	{Name: "from", Doc: "Start of the range (RFC 3339 or Unix seconds; default: an hour ago)"},
	{Name: "to", Doc: "End of the range (default: now)"},
	{Name: "interval", Type: "number", Doc: "Bucket width in seconds (default: chosen from the range)"},
	{Name: "step_type"}, {Name: "channel"},
}

func analyticsDoc(summary string, body any) Doc {
	return Doc{Summary: summary, Tag: "analytics", Params: analyticsParams, Responses: []Response{OK(body)}, Errors: []int{403},
		Examples: []Example{{Name: "last-hour", Summary: "The last hour"}}}
}

type deviceRegistration struct {
	PushToken  *string `json:"push_token" openapi:"required" doc:"The push service's token of the device"`
	DeviceName *string `json:"device_name" openapi:"required"`
	Platform   *string `json:"platform" openapi:"required" enum:"ios,android,web"`
}

var (
	docAnalyticsOverview     = analyticsDoc("Documents in, out and failed; end-to-end latency", docflow.OverviewReport{})
	docAnalyticsSteps        = analyticsDoc("Each step type's attempts, errors and durations", docflow.StepsReport{})
	docAnalyticsIntake       = analyticsDoc("Documents taken in per channel", docflow.IntakeReport{})
	docAnalyticsErrors       = analyticsDoc("Failures per error class", docflow.ErrorsReport{})
	docAnalyticsLag          = analyticsDoc("Backlog and consumer lag per topic", docflow.LagReport{})
	docAnalyticsRequests     = analyticsDoc("HTTP requests, errors and latency", docflow.RequestsReport{})
	docAnalyticsIntegrations = analyticsDoc("Integrations' deliveries and failures", docflow.IntegrationsReport{})

	docMetrics = Doc{
		Summary:   "Prometheus metrics",
		Tag:       "diagnostic",
		Responses: []Response{{Status: 200, Binary: true, ContentType: "text/plain; version=0.0.4", Doc: "The Prometheus text format"}},
	}
	docTestNotification = Doc{
		Summary:   "Send a test message through the administrators' notification channels",
		NoBody:    true,
		Responses: []Response{OK(docflow.NotificationReport{})},
	}
	docListFolders = Doc{
		Summary:     "Browse the folders of a cloud destination",
		Tag:         "cloud",
		Description: "The path segment names the provider (dropbox, googledrive, onedrive…). The body names the integration and the folder.",
		Body:        map[string]any{},
		Responses:   []Response{OK(map[string]any{})},
		Errors:      []int{400, 404, 502},
	}
	docCloudSendTo = Doc{
		Summary:     "Send a document to the caller's destination of this provider",
		Tag:         "cloud",
		Description: "file_path (query or form) is the document's id, its stored file name, or a path ending in it.",
		Params:      []Param{{Name: "file_path", Required: true}, {Name: "integration_id", Type: "integer"}},
		NoBody:      true,
		Responses:   []Response{OK(map[string]any{})},
		Errors:      []int{404},
	}
	docRegisterDevice = Doc{
		Summary:     "Register a device for push notifications",
		Tag:         "mobile",
		Description: "Registering the same push token again answers the existing device.",
		Body:        deviceRegistration{},
		Responses:   []Response{Created(docflow.MobileDevice{})},
	}
	docListDevices = Doc{
		Summary:   "List the caller's devices",
		Tag:       "mobile",
		Responses: []Response{OK([]*docflow.MobileDevice{})},
		Examples:  []Example{{Name: "list", Summary: "Registered devices"}},
	}
	docDeleteDevice = Doc{
		Summary:     "Deactivate a device, or delete an inactive one",
		Tag:         "mobile",
		Description: "An active device is deactivated (detail Device deactivated); an inactive one deleted (Device deleted).",
		Responses:   []Response{OK(Detail{})},
		Errors:      []int{404},
	}
)
