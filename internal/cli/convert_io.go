package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadConvertInputs reads what -f names: a file, the .yaml, .yml and
// .json files of a directory and its subdirectories (in lexical order),
// or stdin for "-".
func ReadConvertInputs(name string, stdin io.Reader) ([]ConvertInput, error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		return []ConvertInput{{Name: "stdin", Data: b}}, nil
	}
	st, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		b, rerr := os.ReadFile(name)
		if rerr != nil {
			return nil, rerr
		}
		return []ConvertInput{{Name: name, Data: b}}, nil
	}
	var out []ConvertInput
	err = filepath.WalkDir(name, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		b, err := os.ReadFile(path) //nolint:gosec // the files the user named, read as the user who runs the command
		if err != nil {
			return err
		}
		out = append(out, ConvertInput{Name: path, Data: b})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no .yaml, .yml or .json file", name)
	}
	return out, nil
}

// PrintFindings writes one line per finding, the dropped ones first, and
// a summary. Findings hold paths and reasons, never values.
func PrintFindings(w io.Writer, findings []Finding) {
	var dropped, notes int
	for _, sev := range []Severity{Dropped, Note} {
		for _, f := range findings {
			if f.Severity == sev {
				fmt.Fprintln(w, f)
				if sev == Dropped {
					dropped++
				} else {
					notes++
				}
			}
		}
	}
	switch {
	case dropped > 0:
		fmt.Fprintf(w, "%d settings not carried (see above), %d notes\n", dropped, notes)
	case notes > 0:
		fmt.Fprintf(w, "everything carried; %d notes\n", notes)
	}
}
