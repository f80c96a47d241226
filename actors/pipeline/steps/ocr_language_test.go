package steps

import "testing"

// A step's auto language is TESSERACT_LANGUAGE with EASYOCR_LANGUAGES'
// Tesseract languages added; a step that names its language keeps it.
func TestOCRLanguageWithEasyOCR(t *testing.T) {
	t.Parallel()
	s := &ocrStep{d: Deps{Settings: newSettings("EASYOCR_LANGUAGES", "en,fr")}}
	if got := s.language(nil); got != "eng+deu+fra" {
		t.Errorf("auto: %q", got)
	}
	if got := s.language(map[string]any{"ocr_language": "spa"}); got != "spa" {
		t.Errorf("named: %q", got)
	}
	s = &ocrStep{d: Deps{Settings: newSettings()}}
	if got := s.language(map[string]any{"ocr_language": "auto"}); got != "eng+deu" {
		t.Errorf("without EasyOCR languages: %q", got)
	}
}
