package docflow

import (
	"slices"
	"strings"
)

// Values of settings: the suggestion lists of the settings API (GET
// /api/settings/{key}/suggestions), the values a setting's field offers as
// its user types (fixed here; TESSERACT_LANGUAGE's are the installed
// languages, which the process asks Tesseract for), and what the region
// and EasyOCR settings mean for the OCR step.

// AWSRegions are the AWS regions (AWS_REGION).
var AWSRegions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2",
	"af-south-1", "ap-east-1", "ap-east-2", "ap-south-1", "ap-south-2",
	"ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7",
	"ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
	"ca-central-1", "ca-west-1",
	"eu-central-1", "eu-central-2", "eu-west-1", "eu-west-2", "eu-west-3",
	"eu-south-1", "eu-south-2", "eu-north-1",
	"il-central-1", "me-south-1", "me-central-1", "mx-central-1", "sa-east-1",
	"us-gov-east-1", "us-gov-west-1", "cn-north-1", "cn-northwest-1",
}

// AzureRegions are the Azure regions' programmatic names (AZURE_REGION).
var AzureRegions = []string{
	"eastus", "eastus2", "centralus", "northcentralus", "southcentralus", "westcentralus",
	"westus", "westus2", "westus3", "canadacentral", "canadaeast", "brazilsouth", "mexicocentral",
	"northeurope", "westeurope", "uksouth", "ukwest", "francecentral", "germanywestcentral",
	"switzerlandnorth", "norwayeast", "swedencentral", "polandcentral", "italynorth", "spaincentral",
	"uaenorth", "qatarcentral", "israelcentral", "southafricanorth",
	"eastasia", "southeastasia", "japaneast", "japanwest", "koreacentral", "koreasouth",
	"centralindia", "southindia", "westindia", "australiaeast", "australiasoutheast", "australiacentral",
	"usgovvirginia", "usgovarizona", "chinanorth3", "chinaeast2",
}

// EasyOCRTesseract are EasyOCR's language codes (EASYOCR_LANGUAGES), each
// with the Tesseract language that reads the same script and language.
var EasyOCRTesseract = map[string]string{
	"en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por", "nl": "nld",
	"da": "dan", "no": "nor", "sv": "swe", "fi": "fin", "pl": "pol", "cs": "ces", "sk": "slk",
	"sl": "slv", "hu": "hun", "ro": "ron", "hr": "hrv", "tr": "tur", "ru": "rus", "uk": "ukr",
	"bg": "bul", "be": "bel", "sr": "srp", "el": "ell", "ar": "ara", "fa": "fas", "ur": "urd",
	"he": "heb", "hi": "hin", "bn": "ben", "ta": "tam", "te": "tel", "mr": "mar", "ne": "nep",
	"th": "tha", "vi": "vie", "id": "ind", "ms": "msa", "tl": "tgl", "ja": "jpn", "ko": "kor",
	"ch_sim": "chi_sim", "ch_tra": "chi_tra", "la": "lat", "ga": "gle", "is": "isl", "lt": "lit",
	"lv": "lav", "et": "est", "sq": "sqi", "af": "afr", "az": "aze", "cy": "cym", "mn": "mon",
}

// EasyOCRLanguageCodes are the keys of EasyOCRTesseract, sorted.
func EasyOCRLanguageCodes() []string {
	out := make([]string, 0, len(EasyOCRTesseract))
	for k := range EasyOCRTesseract {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// EmbeddingModels are well-known embedding models of OpenAI-compatible
// endpoints (EMBEDDING_MODEL): OpenAI's, and those local servers such as
// Ollama or LocalAI commonly serve.
var EmbeddingModels = []string{
	"text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002",
	"nomic-embed-text", "mxbai-embed-large", "all-minilm", "bge-m3", "bge-large-en-v1.5",
	"snowflake-arctic-embed", "multilingual-e5-large", "jina-embeddings-v3",
}

// FilterSuggestions returns up to limit values of all that contain q,
// ignoring case: those that start with it first, each group in the order
// of all.
func FilterSuggestions(all []string, q string, limit int) []string {
	q = strings.ToLower(strings.TrimSpace(q))
	var first, rest []string
	for _, v := range all {
		lv := strings.ToLower(v)
		switch {
		case strings.HasPrefix(lv, q):
			first = append(first, v)
		case strings.Contains(lv, q):
			rest = append(rest, v)
		}
	}
	out := append(first, rest...)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// AzureRegionalEndpoint is the regional Azure AI services endpoint of
// region (https://westeurope.api.cognitive.microsoft.com), the Document
// Intelligence endpoint when AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT is
// empty; "" for an empty region.
func AzureRegionalEndpoint(region string) string {
	region = strings.ToLower(strings.TrimSpace(region))
	if region == "" {
		return ""
	}
	return "https://" + region + ".api.cognitive.microsoft.com"
}

// OCRLanguagesWithEasyOCR adds to the Tesseract language expression
// tesseract (eng+deu) the languages of easyocr (EASYOCR_LANGUAGES, codes
// of the original service's EasyOCR engine such as en or ch_sim) that
// Tesseract reads, each once; codes without a Tesseract language are left
// out.
func OCRLanguagesWithEasyOCR(tesseract string, easyocr []string) string {
	var langs []string
	for _, l := range strings.Split(tesseract, "+") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	for _, c := range easyocr {
		if l, ok := EasyOCRTesseract[strings.ToLower(strings.TrimSpace(c))]; ok && !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	return strings.Join(langs, "+")
}
