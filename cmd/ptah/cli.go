package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"ptah.run/operator/cmd/internal/flags"
	"ptah.run/operator/operator/artifact"
	"ptah.run/operator/operator/database"
	"ptah.run/operator/operator/report"
)

// action runs a command once its flags are parsed, with the positional
// arguments. negative reports an expected negative answer (exit 1).
type action func(ctx context.Context, args []string) (result any, negative bool, err error)

// command declares its flags on fs and returns what to run.
type command struct {
	summary string
	setup   func(fs *flag.FlagSet) action
}

var commands = map[string]command{
	"version":           {"print the version", versionCmd},
	"schema push":       {"push SQL files as a schema artifact: schema push oci://HOST/REPO:TAG --schema-file F.sql ...", schemaPush},
	"schema pull":       {"pull a schema artifact into one SQL file: schema pull REF --out FILE", schemaPull},
	"schema plan":       {"plan the statements that take the database to the desired schema", schemaPlan},
	"schema drift":      {"report how the database differs from the desired schema (exit 1 on drift)", schemaDrift},
	"schema apply":      {"apply a plan to the state it was computed from", schemaApply},
	"oci resolve":       {"pin a reference to its digest: oci resolve REF", ociResolve},
	"oci inspect":       {"show an artifact's manifest: oci inspect REF", ociInspect},
	"oci verify":        {"check an artifact against a policy: oci verify REF --policy FILE", ociVerify},
	"migrations hash":   {"write the checksum file of a migrations directory", migrationsHash},
	"migrations status": {"report applied and pending migrations", migrationsStatus},
	"migrations up":     {"apply the pending migrations", migrationsUp},
	"migrations push":   {"push a migrations directory as an artifact: migrations push REF --dir DIR", migrationsPush},
	"migrations pull":   {"pull a migrations artifact into a directory: migrations pull REF --dir DIR", migrationsPull},
}

func run(ctx context.Context, argv []string, stdout, stderr io.Writer) int {
	name, rest := commandName(argv)
	cmd, ok := commands[name]
	if !ok {
		return finish(stdout, stderr, name, hasJSONFlag(argv), nil, false,
			report.Errorf(report.Usage, "unknown command %q; commands: %s", strings.Join(argv[:min(len(argv), 2)], " "), commandList()))
	}
	fs := flag.NewFlagSet("ptah "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print the result as one line of JSON on stdout")
	act := cmd.setup(fs)
	args, err := flags.ParseInterleaved(fs, rest)
	if err != nil {
		return finish(stdout, stderr, name, hasJSONFlag(argv), nil, false, report.Errorf(report.Usage, "%v", err))
	}
	result, negative, err := act(ctx, args)
	return finish(stdout, stderr, name, *asJSON, result, negative, err)
}

// commandName takes the longest known command name off the front of argv.
func commandName(argv []string) (string, []string) {
	if len(argv) >= 2 {
		if _, ok := commands[argv[0]+" "+argv[1]]; ok {
			return argv[0] + " " + argv[1], argv[2:]
		}
	}
	if len(argv) >= 1 {
		return argv[0], argv[1:]
	}
	return "", nil
}

func commandList() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func hasJSONFlag(argv []string) bool {
	for _, a := range argv {
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// finish prints the outcome: the JSON document on stdout with --json, else
// the result as text; an error also goes to stderr either way.
func finish(stdout, stderr io.Writer, name string, asJSON bool, result any, negative bool, err error) int {
	doc := report.New(name, result, negative, err)
	if doc.Error != nil {
		fmt.Fprintf(stderr, "ptah %s: %s: %s\n", name, doc.Error.Code, doc.Error.Message)
	}
	if asJSON {
		if werr := doc.Write(stdout); werr != nil {
			fmt.Fprintf(stderr, "ptah: write the result: %v\n", werr)
			return report.ExitError
		}
	} else if result != nil {
		printHuman(stdout, result)
	}
	return doc.ExitCode
}

// printHuman prints a result for a person: its own text when it has one,
// indented JSON otherwise.
func printHuman(w io.Writer, result any) {
	if t, ok := result.(interface{ Text() string }); ok {
		fmt.Fprint(w, t.Text())
		return
	}
	b, _ := json.MarshalIndent(result, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func listFlag(fs *flag.FlagSet, name, usage string) *stringList {
	l := &stringList{}
	fs.Var(l, name, usage)
	return l
}

// dbFlags are the flags of every command that connects to a database.
type dbFlags struct {
	url            *string
	connectTimeout *time.Duration
}

func newDBFlags(fs *flag.FlagSet) dbFlags {
	return dbFlags{
		url:            fs.String("url", "", "database URL postgres://USER:PASSWORD@HOST:PORT/DB (default $"+database.URLEnv+")"),
		connectTimeout: fs.Duration("connect-timeout", 10*time.Second, "give up connecting after this long"),
	}
}

func (f dbFlags) open(ctx context.Context) (*database.DB, error) {
	return database.Open(ctx, database.URLFrom(*f.url), *f.connectTimeout)
}

// openReadOnly opens the session of a command that only reads.
func (f dbFlags) openReadOnly(ctx context.Context) (*database.DB, error) {
	return database.OpenReadOnly(ctx, database.URLFrom(*f.url), *f.connectTimeout)
}

// newOCIClient declares the flags of every command that talks to a
// registry and returns the client they configure.
func newOCIClient(fs *flag.FlagSet) func() *artifact.Client {
	plain := fs.Bool("plain-http", false, "speak plain HTTP to the registry (a lab registry)")
	return func() *artifact.Client {
		return &artifact.Client{Credentials: artifact.CredentialsFromEnv(), PlainHTTP: *plain}
	}
}

func oneArg(args []string, what string) (string, error) {
	if len(args) != 1 {
		return "", report.Errorf(report.Usage, "want exactly one argument, %s; got %d", what, len(args))
	}
	return args[0], nil
}

func noArgs(args []string) error {
	if len(args) != 0 {
		return report.Errorf(report.Usage, "unexpected argument %q", args[0])
	}
	return nil
}

type versionResult struct {
	Version string `json:"version"`
}

func (v versionResult) Text() string { return v.Version + "\n" }

func versionCmd(fs *flag.FlagSet) action {
	return func(ctx context.Context, args []string) (any, bool, error) {
		return versionResult{version}, false, noArgs(args)
	}
}
