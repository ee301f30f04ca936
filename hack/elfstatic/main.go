// Command elfstatic checks that ELF binaries are statically linked: no
// program interpreter and no shared libraries needed. `make image-binary`
// runs it on the binary that `make image` puts into an image without a C
// library, where a dynamic binary would not start.
package main

import (
	"debug/elf"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: elfstatic BINARY...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		if err := checkStatic(path); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			failed = true
			continue
		}
		fmt.Printf("%s: statically linked\n", path)
	}
	if failed {
		os.Exit(1)
	}
}

// checkStatic returns an error when the ELF file at path asks for a
// program interpreter (the dynamic loader) or names shared libraries.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked: it needs a program interpreter (build with CGO_ENABLED=0)")
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading its dynamic section: %w", err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("dynamically linked: it needs %v (build with CGO_ENABLED=0)", libs)
	}
	return nil
}
