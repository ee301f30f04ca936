package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// tuningComment starts a comment that says what a tuning buys and which
// figure justifies it.
var tuningComment = regexp.MustCompile(`(?m)^\s*// Tuning\b`)

// backquoted is a code span of a Markdown table cell.
var backquoted = regexp.MustCompile("`([^`]+)`")

// TestTuningTableMatchesTheCode keeps the table "Where the tuning lives"
// of test/bench/FINDINGS.md and the code's "Tuning" comments in step:
// every Go file the table's second column names exists, the names given
// after it are found in that file's package, and every Go file with a
// "Tuning" comment is named in the table. A tuning removed, moved or added
// without its row fails here.
func TestTuningTableMatchesTheCode(t *testing.T) {
	root := filepath.Join("..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "test", "bench", "FINDINGS.md"))
	if err != nil {
		t.Fatal(err)
	}
	const heading = "## Where the tuning lives\n"
	_, section, ok := strings.Cut(string(raw), heading)
	if !ok {
		t.Fatalf("test/bench/FINDINGS.md has no section %q", strings.TrimSpace(heading))
	}
	section, _, _ = strings.Cut(section, "\n## ")
	named := map[string]bool{}
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 4 || strings.HasPrefix(line, "| tuning |") {
			continue
		}
		rows++
		row := strings.TrimPrefix(cells[0], "| ")
		pkg := ""
		for _, m := range backquoted.FindAllStringSubmatch(cells[1], -1) {
			item := m[1]
			if strings.HasSuffix(item, ".go") {
				if _, err := os.Stat(filepath.Join(root, item)); err != nil {
					t.Errorf("the row %q names %s, which does not exist", row, item)
					pkg = ""
					continue
				}
				named[item] = true
				pkg = packageText(t, filepath.Join(root, filepath.Dir(item)))
				continue
			}
			// A name in the file's package: a type, a function or a
			// method (Type.method), or a field.
			name := item[strings.LastIndex(item, ".")+1:]
			if pkg == "" {
				t.Errorf("the row %q names %s before any file", row, item)
			} else if !regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`).MatchString(pkg) {
				t.Errorf("the row %q names %s, which the package of the file before it does not hold", row, item)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("read %d rows of the table: the parse is wrong", rows)
	}
	commented := 0
	for _, dir := range []string{"internal", "cmd", "pkg"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if !tuningComment.Match(src) {
				return nil
			}
			commented++
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !named[rel] {
				t.Errorf("%s has a Tuning comment, but the table of test/bench/FINDINGS.md does not name it", rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if commented == 0 {
		t.Fatal("found no Tuning comment: the walk looks in the wrong place")
	}
	t.Logf("%d rows; %d files with a Tuning comment", rows, commented)
}

// packageText is the text of the non-test Go files of dir.
func packageText(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}
