package http

import "docflow"

// The documentation of the settings API, its page and the system reset
// (/openapi.json), with the shapes of their answers.

type settingsList struct {
	Settings   []settingView `json:"settings"`
	Categories []string      `json:"categories"`
}

// settingSet documents the body of POST /api/settings/{key}.
type settingSet struct {
	Key   *string `json:"key" doc:"The key again (optional; must match the path)"`
	Value any     `json:"value" openapi:"required" doc:"The new value: a string, number or boolean"`
}

type settingBulkItem struct {
	Key   string `json:"key" openapi:"required"`
	Value any    `json:"value" openapi:"required" doc:"A string, number or boolean; \"\" (or a secret's mask) is ignored"`
}

type settingsBulkResult struct {
	Detail          string        `json:"detail"`
	Updated         []string      `json:"updated"`
	Errors          []bulkError   `json:"errors" doc:"The keys refused and why"`
	Ignored         []string      `json:"ignored"`
	RestartRequired bool          `json:"restart_required"`
	Settings        []settingView `json:"settings" doc:"The updated settings as they now are"`
}

type credentialsOverview struct {
	Credentials       []credentialView `json:"credentials"`
	Total             int              `json:"total"`
	ConfiguredCount   int              `json:"configured_count"`
	UnconfiguredCount int              `json:"unconfigured_count"`
}

type settingSuggestions struct {
	Key         string   `json:"key"`
	Suggestions []string `json:"suggestions"`
}

type resetStatus struct {
	Enabled               bool `json:"enabled" doc:"ENABLE_FACTORY_RESET: whether the reset routes work"`
	FactoryResetOnStartup bool `json:"factory_reset_on_startup"`
}

// resetRequest documents the body of the reset routes.
type resetRequest struct {
	Confirmation string `json:"confirmation" openapi:"required" enum:"DELETE,REIMPORT" doc:"DELETE for a full reset, REIMPORT for a reset with reimport"`
}

type resetDone struct {
	Status string               `json:"status" example:"success"`
	Result *docflow.ResetResult `json:"result"`
}

var settingKeyParam = Param{Name: "key", In: "path", Required: true, Doc: "The setting's key, as the catalogue spells it or in lower case", Example: "STEP_TIMEOUT"}

var (
	docListSettings = Doc{
		Summary:     "List every setting with its effective value and source",
		Description: "Administrators only. A sensitive value shows as ******** when set, \"\" when not.",
		Tag:         "settings",
		Responses:   []Response{OK(settingsList{})},
		Examples:    []Example{{Name: "all", Summary: "Every setting"}},
	}
	docSettingCredentials = Doc{
		Summary:   "Which sensitive settings are configured, and where (never their values)",
		Tag:       "settings",
		Responses: []Response{OK(credentialsOverview{})},
		Examples:  []Example{{Name: "credentials", Summary: "The credentials overview"}},
	}
	docBulkSettings = Doc{
		Summary: "Set several settings at once",
		Description: "The body is an array of {key, value} (or {\"settings\": [...]}). Each key's outcome is reported; " +
			"empty values are ignored, never clearing anything. 422 with the same body when nothing was stored and something was refused.",
		Tag:       "settings",
		Body:      []settingBulkItem{},
		Responses: []Response{OK(settingsBulkResult{}), {Status: 422, Body: settingsBulkResult{}, Doc: "Every value was refused"}},
	}
	docGetSetting = Doc{
		Summary:   "One setting",
		Tag:       "settings",
		Params:    []Param{settingKeyParam},
		Responses: []Response{OK(settingView{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "one", Summary: "The step timeout", Params: map[string]string{"key": "STEP_TIMEOUT"}}},
	}
	docSetSetting = Doc{
		Summary: "Set one setting",
		Description: "Applies in every process at once unless restart_required. A value the service cannot use is 422 " +
			"naming why; environment-only keys (DATABASE_URL, WORKDIR, SESSION_SECRET, LOG_FORMAT) are 422.",
		Tag:       "settings",
		Params:    []Param{settingKeyParam},
		Body:      settingSet{},
		Responses: []Response{OK(settingView{})},
		Errors:    []int{404},
	}
	docDeleteSetting = Doc{
		Summary:     "Go back to the environment's value or the default",
		Description: "Answers the setting as it now is.",
		Tag:         "settings",
		Params:      []Param{settingKeyParam},
		NoBody:      true,
		Responses:   []Response{OK(settingView{})},
		Errors:      []int{404},
	}
	docSettingSuggestions = Doc{
		Summary: "Suggested values of a setting (models, regions, languages)",
		Tag:     "settings",
		Params: []Param{settingKeyParam, Query("q", "string", "Keep the values containing this"),
			{Name: "limit", Type: "integer", Min: 1, Max: 50, Default: 10, Doc: "How many at most"}},
		Responses: []Response{OK(settingSuggestions{})},
		Errors:    []int{400, 404},
	}
	docSettingsPage = Doc{
		Summary:   "The settings page (administrators)",
		Tag:       "settings",
		Responses: []Response{HTML("The page"), {Status: 303, Doc: "To /login when not signed in", Headers: map[string]string{"Location": "/login?next=/settings"}}},
		Errors:    []int{403},
	}
	docResetStatus = Doc{
		Summary:   "Whether the system reset is enabled",
		Tag:       "admin",
		Responses: []Response{OK(resetStatus{})},
		Examples:  []Example{{Name: "status", Summary: "Is reset allowed"}},
	}
	docResetFull = Doc{
		Summary: "Wipe every document, user and setting made through docflow",
		Description: "403 while ENABLE_FACTORY_RESET is off; the confirmation must be exactly DELETE (else 422). " +
			"The audit entry is the first row of the new audit log.",
		Tag:       "admin",
		Body:      resetRequest{},
		Responses: []Response{OK(resetDone{})},
		Errors:    []int{403},
	}
	docResetReimport = Doc{
		Summary:     "Wipe everything but keep the originals, moved to the reimport folder",
		Description: "403 while ENABLE_FACTORY_RESET is off; the confirmation must be exactly REIMPORT (else 422).",
		Tag:         "admin",
		Body:        resetRequest{},
		Responses:   []Response{OK(resetDone{})},
		Errors:      []int{403},
	}
)
