// Package quality computes the OCR quality score (0–100) of decisions.md:
// 100 for a born-digital text layer; otherwise a blend of the share of
// dictionary-like words, the amount of character noise and, when OCR ran,
// Tesseract's mean word confidence.
package quality

import (
	"math"
	"strings"
	"unicode"
)

// BornDigital is the score of a document whose text came from its own text
// layer rather than from OCR.
const BornDigital = 100.0

// NoConfidence marks a score input where no OCR engine reported confidence.
const NoConfidence = -1.0

// Breakdown explains a score.
type Breakdown struct {
	Score float64 `json:"score"`
	// WordShare is the share of word tokens that look like real words.
	WordShare float64 `json:"word_share"`
	// Noise is the share of non-space characters that are neither letters,
	// digits nor common punctuation.
	Noise float64 `json:"noise"`
	// Confidence is the engine's mean word confidence (0–100), or -1.
	Confidence float64 `json:"confidence"`
	Words      int     `json:"words"`
}

// Score returns the quality score of OCR text. meanConfidence is the OCR
// engine's mean word confidence on a 0–100 scale, or NoConfidence.
func Score(text string, meanConfidence float64) float64 {
	return Assess(text, meanConfidence).Score
}

// Assess returns the score with its parts.
func Assess(text string, meanConfidence float64) Breakdown {
	b := Breakdown{Confidence: meanConfidence}
	var chars, noisy int
	for _, r := range text {
		if unicode.IsSpace(r) {
			continue
		}
		chars++
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(commonPunct, r) {
			noisy++
		}
	}
	if chars == 0 {
		return b
	}
	b.Noise = float64(noisy) / float64(chars)

	var words, good int
	for _, tok := range strings.Fields(text) {
		w := strings.Trim(tok, trimPunct)
		if w == "" || isNumeric(w) {
			continue // numbers and lone punctuation say nothing about quality
		}
		words++
		if dictionaryLike(w) {
			good++
		}
	}
	b.Words = words
	if words > 0 {
		b.WordShare = float64(good) / float64(words)
	}
	// Noise hurts twice its share: 10 % stray symbols already means a page
	// that a reader would call garbled.
	textScore := 100 * b.WordShare * math.Max(0, 1-2*b.Noise)
	score := textScore
	if meanConfidence >= 0 {
		score = 0.5*textScore + 0.5*math.Min(meanConfidence, 100)
	}
	b.Score = math.Round(math.Max(0, math.Min(100, score))*10) / 10
	return b
}

const (
	commonPunct = ".,;:!?'\"()[]-–—/\\&%€$£¥@#+*=§°_<>«»„“”‘’…|"
	trimPunct   = ".,;:!?'\"()[]{}«»„“”‘’…*"
)

func isNumeric(w string) bool {
	digits := 0
	for _, r := range w {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	return digits*2 >= len([]rune(w))
}

// dictionaryLike reports whether a token looks like a word of a natural
// language: letters only (plus inner hyphen or apostrophe), a plausible
// length, a vowel, no long consonant run and no mixed case inside the word.
// It needs no word list, so it works for every language Tesseract reads in
// Latin script.
func dictionaryLike(w string) bool {
	rs := []rune(w)
	if len(rs) > 30 {
		return false
	}
	if len(rs) == 1 {
		return strings.ContainsRune("aAiIoOyYeEàÀ&", rs[0])
	}
	vowels, run, maxRun, upper := 0, 0, 0, 0
	for i, r := range rs {
		switch {
		case unicode.IsLetter(r):
		case (r == '-' || r == '\'' || r == '’') && i > 0 && i < len(rs)-1:
			run = 0
			continue
		default:
			return false
		}
		if unicode.IsUpper(r) {
			upper++
			if i > 0 && upper != i+1 && !unicode.IsUpper(rs[i-1]) && rs[i-1] != '-' {
				return false // "wOrd": lower then upper inside a word
			}
		}
		if strings.ContainsRune("aeiouyäöüàâéèêëîïôûùáíóúñåæøœAEIOUYÄÖÜÀÂÉÈÊËÎÏÔÛÙÁÍÓÚÑÅÆØŒ", r) {
			vowels++
			run = 0
		} else {
			run++
			maxRun = max(maxRun, run)
		}
	}
	if vowels == 0 {
		// Short all-caps abbreviations (VAT, GmbH) are fine.
		return upper == len(rs) && len(rs) <= 5
	}
	return maxRun <= 5
}
