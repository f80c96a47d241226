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
//   - pdfsafe: removes active content (JavaScript, launch actions…) from
//     the processed PDF
//   - pdfconf: every pdfcpu configuration, built without pdfcpu's shared
//     config-file cache, which races between concurrent steps
//   - internal/httpx, internal/openai: the HTTP retries and the
//     OpenAI-compatible client the network providers share
//
// Tools run through internal/proc, under its time and memory limits.
//
// Errors caused by the document itself carry docflow.EINVALID, a missing
// tool docflow.EUNAVAILABLE and a timeout docflow.ETIMEOUT, so that the engine
// can tell a poisoned document (no retry) from a transient fault.
package processing
