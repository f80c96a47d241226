package docflow

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches an inline Markdown link or image: [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan matches inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("`[^`]*`")

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped but for - and _, spaces as -.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdPage is a Markdown page's anchors and links, code blocks left out.
type mdPage struct {
	anchors map[string]bool
	links   []mdRef
}

type mdRef struct {
	line   int
	target string
}

func readPage(path string) (mdPage, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return mdPage{}, err
	}
	p := mdPage{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	for i, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		if strings.HasPrefix(t, "#") {
			h := strings.TrimSpace(strings.TrimLeft(t, "#"))
			s := slug(h)
			if n := seen[s]; n > 0 {
				p.anchors[s+"-"+itoa(n)] = true
			} else {
				p.anchors[s] = true
			}
			seen[s]++
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			p.links = append(p.links, mdRef{line: i + 1, target: m[1]})
		}
	}
	return p, nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// TestDocLinks checks every relative link of the repository's Markdown
// pages: the file it names exists and, for a page, so does the heading its
// #anchor names.
func TestDocLinks(t *testing.T) {
	pages := map[string]mdPage{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			p, err := readPage(path)
			if err != nil {
				return err
			}
			pages[filepath.ToSlash(path)] = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no Markdown pages found")
	}
	for from, page := range pages {
		for _, l := range page.links {
			target := l.target
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := from
			if file != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(from), file))
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", from, l.line, target, dest)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !pages[dest].anchors[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading #%s", from, l.line, target, dest, anchor)
			}
		}
	}
}

// TestConfigurationDocumentsEverySetting keeps docs/configuration.md
// complete: every setting of the catalogue is in it, written `KEY`.
func TestConfigurationDocumentsEverySetting(t *testing.T) {
	b, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, d := range Catalogue() {
		if !strings.Contains(page, "`"+d.Key+"`") {
			t.Errorf("docs/configuration.md does not mention %s: add it to the table of its topic (default %q: %s)", d.Key, d.Default, d.Description)
		}
	}
}
