package http

// The answers of the health checks, and the documentation of the health
// routes and the pages (/openapi.json).

type readiness struct {
	Status string                 `json:"status" enum:"ready,not_ready"`
	Checks map[string]checkResult `json:"checks"`
}

type healthReport struct {
	Status    string                 `json:"status" enum:"healthy,degraded,unhealthy"`
	Version   string                 `json:"version"`
	Timestamp string                 `json:"timestamp" doc:"RFC 3339, UTC"`
	Checks    map[string]checkResult `json:"checks" doc:"Each check's status; the detail of a failure is for administrators"`
}

type liveness struct {
	Status string `json:"status" example:"ok"`
}

var (
	docLive = Doc{
		Summary:   "Liveness: the process answers",
		Tag:       "diagnostic",
		Responses: []Response{OK(liveness{})},
		Examples:  []Example{{Name: "live", Summary: "Always ok while the process runs"}},
	}
	docReady = Doc{
		Summary:   "Readiness: the critical dependencies answer",
		Tag:       "diagnostic",
		Responses: []Response{OK(readiness{}), {Status: 503, Body: readiness{}, Doc: "A critical check failed"}},
		Examples:  []Example{{Name: "ready", Summary: "Ready to serve"}},
	}
	docHealth = Doc{
		Summary:     "Health of every dependency, with the version",
		Description: "503 when a critical check fails (unhealthy); degraded when another does.",
		Tag:         "diagnostic",
		Responses:   []Response{OK(healthReport{}), {Status: 503, Body: healthReport{}, Doc: "Unhealthy"}},
		Examples:    []Example{{Name: "health", Summary: "All checks"}},
	}
	docHome = Doc{
		Summary:   "The status page: who you are, the health checks, the administrator's notices",
		Responses: []Response{HTML("The page"), {Status: 303, Doc: "To /login when not signed in", Headers: map[string]string{"Location": "/login?next=%2Fstatus"}}},
	}
	docAppPage = Doc{
		Summary: "A page of the web application (documents, a document, pipelines, rules, integrations, webhooks, tokens, users, audit)",
		Description: "Every page route answers the same HTML page, with the signed-in user in a meta element; " +
			"the application's scripts then use this API.",
		Responses: []Response{HTML("The page"), {Status: 303, Doc: "To /login when not signed in, back here after", Headers: map[string]string{"Location": "/login?next=%2F"}}},
	}
	docAppAsset = Doc{
		Summary:   "A script or style of the web application (its name carries a hash of its content)",
		Params:    []Param{{Name: "name", In: "path", Doc: "The file's name"}},
		Responses: []Response{{Status: 200, Binary: true, Doc: "The file, cached as immutable"}},
		Errors:    []int{404},
	}
	docDocsPage = Doc{
		Summary:   "This reference, interactive",
		Responses: []Response{HTML("The page")},
	}
	docOpsPage = Doc{
		Summary:   "The operations page (administrators)",
		Responses: []Response{HTML("The page"), {Status: 303, Doc: "To /login when not signed in", Headers: map[string]string{"Location": "/login?next=/ops"}}},
		Errors:    []int{403},
	}
	docStatic = Doc{
		Summary:   "A file the pages load (styles, scripts)",
		Params:    []Param{{Name: "name", In: "path", Doc: "The file's name"}},
		Responses: []Response{{Status: 200, Binary: true, Doc: "The file"}},
		Errors:    []int{404},
	}
)
