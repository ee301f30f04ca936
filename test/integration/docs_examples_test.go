package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The info strings of fenced YAML blocks in the docs (docs/development.md
// says so for writers): a ```yaml block holds whole objects, each applied
// by TestDocsExamplesAreAccepted; a ```yaml fragment block holds a part of
// an object (a recipe, a snippet of a spec) and is not applied; a ```yaml
// helm-values block is a values file of the Helm chart, rendered and
// applied by TestHelmValuesInDocs.
const (
	infoObjects    = "yaml"
	infoFragment   = "yaml fragment"
	infoHelmValues = "yaml helm-values"
	// infoAgentConfig is a config file of `watchword agent`, checked by
	// TestAgentConfigExamplesInDocs.
	infoAgentConfig = "yaml agent-config"
)

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	file string
	line int // of the opening fence
	info string
	body string
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// docBlocks lists the fenced code blocks of a Markdown file. It is written
// here rather than taken from a Markdown library because the docs use
// only plain ``` fences at the start of a line, and a few lines read those
// exactly as GitHub does.
func docBlocks(file string) ([]docBlock, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out  []docBlock
		cur  *docBlock
		body strings.Builder
	)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```")
		switch {
		case cur == nil && fence:
			cur = &docBlock{file: file, line: n, info: strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "`"))}
			body.Reset()
		case cur != nil && fence:
			cur.body = body.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body.WriteString(line)
			body.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: code block is never closed", file, cur.line)
	}
	return out, nil
}

// docFiles lists README.md and every docs/*.md of the repository.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	must(t, err)
	files = append(files, "../../README.md")
	if len(files) < 2 {
		t.Fatal("no docs found")
	}
	return files
}

// docObjects splits a block into its YAML documents and decodes each
// strictly: a key given twice is an error, not a silent overwrite.
func docObjects(body string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(body)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, err
		}
		if string(js) == "null" {
			continue // a document of comments only
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("not a whole object (mark a part of one ```%s): %w", infoFragment, err)
		}
		out = append(out, u)
	}
}

// exampleFiles lists the YAML files under examples/.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	must(t, filepath.WalkDir("../../examples", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return err
	}))
	return files
}

// TestDocsExamplesAreAccepted applies every object of every ```yaml block
// of the docs, and of every YAML file under examples/, with a server-side
// dry run and strict field validation, so
// that an example that the API would refuse (a field that does not exist,
// a value a rule forbids) fails here instead of in a reader's cluster.
//
// The namespace of a namespaced object is replaced by a namespace of this
// test: a dry run needs the namespace to exist, and the names in the docs
// (payments, demo, …) are illustrations that other tests might use for
// something else. Cluster-scoped objects are applied as they are; a dry
// run stores nothing.
func TestDocsExamplesAreAccepted(t *testing.T) {
	parallel(t)
	ns := newNamespace(t, nil)
	applied, blocksApplied := 0, 0
	var notApplied []string
	var blocks []docBlock
	for _, file := range docFiles(t) {
		bs, err := docBlocks(file)
		must(t, err)
		blocks = append(blocks, bs...)
	}
	for _, file := range exampleFiles(t) {
		body, err := os.ReadFile(file)
		must(t, err)
		blocks = append(blocks, docBlock{file: file, line: 1, info: infoObjects, body: string(body)})
	}
	for _, b := range blocks {
		name := strings.TrimPrefix(b.String(), "../../")
		switch {
		case b.info == infoFragment:
			notApplied = append(notApplied, name+" (a fragment)")
			continue
		case b.info == infoAgentConfig:
			notApplied = append(notApplied, name+" (an agent config: TestAgentConfigExamplesInDocs parses it)")
			continue
		case b.info == infoHelmValues:
			notApplied = append(notApplied, name+" (Helm values: TestHelmValuesInDocs renders and applies them)")
			continue
		case b.info != infoObjects:
			// A YAML block under another info string would escape
			// this test; so would an object in an untagged block.
			if strings.HasPrefix(b.info, "yaml") || strings.HasPrefix(b.info, "yml") ||
				(b.info == "" && strings.Contains(b.body, "apiVersion:")) {
				t.Errorf("%s: info string %q: use ```%s for whole objects or ```%s for parts of one", name, b.info, infoObjects, infoFragment)
			}
			continue
		}
		blocksApplied++
		t.Run(name, func(t *testing.T) {
			objs, err := docObjects(b.body)
			if err != nil {
				t.Fatalf("the example does not decode: %v", err)
			}
			if len(objs) == 0 {
				t.Fatalf("a ```%s block holds no object", infoObjects)
			}
			for _, u := range objs {
				namespaced, err := k8s.IsObjectNamespaced(u)
				if err != nil {
					t.Errorf("%s %q: %v", u.GetKind(), u.GetName(), err)
					continue
				}
				if namespaced {
					u.SetNamespace(ns)
				}
				if err := dryRunCreate(u); err != nil {
					t.Errorf("%s %q was refused: %v", u.GetKind(), u.GetName(), err)
				}
				applied++
			}
		})
	}
	t.Logf("%d blocks and files applied (%d objects); %d blocks not applied:\n%s",
		blocksApplied, applied, len(notApplied), strings.Join(notApplied, "\n"))
}
