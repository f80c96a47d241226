// Package processing groups the step logic of the document pipeline: pure
// functions over files and text, with no knowledge of Kafka, actors or HTTP.
//
// Subpackages:
//   - convert: any supported upload type to PDF (LibreOffice, img2pdf, librsvg)
//   - ocr: text layer or Tesseract OCR, searchable PDF, cloud OCR
//   - quality: the OCR quality score
//   - extract: metadata providers (rules, OpenAI-compatible chat)
//   - classify: classification rules and their evaluation
//   - pdfmeta: PDF document properties and the JSON sidecar
//   - embed: embedding providers (feature hashing, OpenAI-compatible)
//
// Errors caused by the document itself carry docflow.EINVALID, a missing
// tool docflow.EUNAVAILABLE and a timeout docflow.ETIMEOUT, so that the engine
// can tell a poisoned document (no retry) from a transient fault.
package processing
