// Command corpusgen writes the generated test corpus into a directory and
// prints its manifest (file, MIME type, ground-truth text) as JSON.
//
//	corpusgen -out /tmp/corpus -seed 1
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"docflow/internal/corpus"
)

func main() {
	out := flag.String("out", "corpus", "directory to write the samples into")
	seed := flag.Int64("seed", 1, "seed of the generated text")
	lines := flag.Int("lines", 25, "text lines per scanned page")
	tiffPages := flag.Int("tiff-pages", 2, "pages of the multi-page TIFF")
	flag.Parse()
	c, err := corpus.Generate(*out, corpus.Options{Seed: *seed, ScanLines: *lines, TIFFPages: *tiffPages})
	if err != nil {
		fmt.Fprintln(os.Stderr, "corpusgen:", err)
		os.Exit(1)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(c.Samples); err != nil {
		fmt.Fprintln(os.Stderr, "corpusgen:", err)
		os.Exit(1)
	}
}
