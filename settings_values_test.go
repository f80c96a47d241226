package docflow

import (
	"strings"
	"testing"
)

func TestFilterSuggestions(t *testing.T) {
	t.Parallel()
	all := []string{"us-east-1", "eu-central-1", "eu-west-1", "ap-east-1"}
	if got := strings.Join(FilterSuggestions(all, "EAST", 10), ","); got != "us-east-1,ap-east-1" {
		t.Errorf("contains, any case: %s", got)
	}
	if got := strings.Join(FilterSuggestions(all, "e", 2), ","); got != "eu-central-1,eu-west-1" {
		t.Errorf("prefix first, limited: %s", got)
	}
	if got := len(FilterSuggestions(all, "", 10)); got != 4 {
		t.Errorf("empty q: %d", got)
	}
}

// EASYOCR_LANGUAGES adds Tesseract's languages to TESSERACT_LANGUAGE, once
// each, leaving out codes Tesseract has none for; AZURE_REGION names the
// regional endpoint.
func TestSettingValuesForOCR(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tess    string
		easyocr []string
		want    string
	}{
		{"eng+deu", nil, "eng+deu"},
		{"eng+deu", []string{"en", "fr", "ch_sim", "xx"}, "eng+deu+fra+chi_sim"},
		{"", []string{"DE"}, "deu"},
	} {
		if got := OCRLanguagesWithEasyOCR(c.tess, c.easyocr); got != c.want {
			t.Errorf("%q + %v = %q, want %q", c.tess, c.easyocr, got, c.want)
		}
	}
	if got := AzureRegionalEndpoint(" WestEurope "); got != "https://westeurope.api.cognitive.microsoft.com" {
		t.Errorf("endpoint %q", got)
	}
	if AzureRegionalEndpoint("") != "" {
		t.Error("an empty region names an endpoint")
	}
	for _, code := range EasyOCRLanguageCodes() {
		if EasyOCRTesseract[code] == "" {
			t.Errorf("%s maps to no Tesseract language", code)
		}
	}
	check := RegionName()
	for v, ok := range map[string]bool{"": true, "eu-central-1": true, "westeurope": true, "EU Central": false, "eu/central": false} {
		if (check(v) == nil) != ok {
			t.Errorf("RegionName(%q): %v", v, check(v))
		}
	}
}
