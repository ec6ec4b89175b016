package main

import (
	"errors"
	"fmt"
	"io"

	"ptah.run/operator/recorder/scenario"
)

// check validates every scenario file and runs nothing.
func check(o options, stdout, stderr io.Writer) int {
	all, err := scenario.LoadDir(o.scenarios)
	var refused scenario.Refusals
	switch {
	case errors.As(err, &refused):
		for _, r := range refused {
			fmt.Fprintln(stderr, r)
		}
		files := countFiles(refused)
		fmt.Fprintf(stderr, "record: %d %s in %d %s\n", len(refused), plural(len(refused), "refusal"), files, plural(files, "file"))
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "record: %v; name a folder of scenario files with -scenarios\n", err)
		return 2
	}
	if o.only != "" {
		found := false
		for _, s := range all {
			found = found || s.ID == o.only
		}
		if !found {
			fmt.Fprintf(stderr, "record: no scenario has id %q in %s\n", o.only, o.scenarios)
			return 2
		}
	}
	steps := 0
	for _, s := range all {
		steps += len(s.Steps)
	}
	fmt.Fprintf(stdout, "%d %s, %d %s: valid\n", len(all), plural(len(all), "scenario"), steps, plural(steps, "step"))
	return 0
}

func countFiles(rs scenario.Refusals) int {
	files := map[string]bool{}
	for _, r := range rs {
		files[r.File] = true
	}
	return len(files)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
