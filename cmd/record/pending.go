package main

import (
	"fmt"
	"io"
)

// record and verify are wired by the recorder's run half; until then they
// say so rather than pretend.
func record(o options, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "record: recording is not implemented yet; use -check")
	return 2
}

func verify(o options, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "record: -verify is not implemented yet; use -check")
	return 2
}
