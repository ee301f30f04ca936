// Package version holds the build's version, set with -ldflags.
package version

// Version is overwritten at build time by the Makefile.
var Version = "dev"
