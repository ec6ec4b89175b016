// Package flags holds what the commands' command lines share.
package flags

import "flag"

// ParseInterleaved parses fs's flags wherever they stand among args, before,
// between or after the positional arguments, as kubectl does ("plan orders
// -o sql" and "plan -o sql orders"), and returns the positional ones in order.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
