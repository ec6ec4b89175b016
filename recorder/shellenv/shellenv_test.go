package shellenv

import (
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func names(an Analysis) []string {
	set := map[string]bool{}
	for _, r := range an.Reads {
		set[r.Name] = true
	}
	out := []string{}
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestReads lists, for each script, every name it reads from its
// environment. A case with no names reads none.
func TestReads(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		// Every expansion form.
		{"plain", `echo $A`, []string{"A"}},
		{"braced", `echo ${A}`, []string{"A"}},
		{"default", `echo ${A:-x}`, []string{"A"}},
		{"default reads inside word", `echo ${A:-$B}`, []string{"A", "B"}},
		{"default nested default", `echo "${A:-${B:-$(echo $C)}}"`, []string{"A", "B", "C"}},
		{"alternate", `echo ${A:+set}`, []string{"A"}},
		{"error op", `echo ${A:?missing $B}`, []string{"A", "B"}},
		{"length", `echo ${#A}`, []string{"A"}},
		{"suffix", `echo ${A%.yaml}`, []string{"A"}},
		{"prefix pattern reads", `echo ${A##$B}`, []string{"A", "B"}},
		{"double quotes", `echo "ns is $A"`, []string{"A"}},
		{"command substitution", `echo $(echo $A)`, []string{"A"}},
		{"backquotes", "echo `echo $A`", []string{"A"}},
		{"nested substitution", `x=$(echo "$(printf %s "$A")")`, []string{"A"}},
		{"unquoted heredoc", "cat <<EOF\nhello $A ${B:-x}\nEOF", []string{"A", "B"}},
		{"dash heredoc", "cat <<-EOF\n\t$A\n\tEOF", []string{"A"}},
		{"arithmetic bare name", `echo $((A + 1))`, []string{"A"}},
		{"arithmetic dollar", `echo $(($A + 1))`, []string{"A"}},
		{"arithmetic nested", `echo $(( (A * 2) ? B : 3 ))`, []string{"A", "B"}},
		{"arithmetic compound assign reads", `echo $((A += 1))`, []string{"A"}},
		{"arithmetic increment reads", `echo $((A++))`, []string{"A"}},
		{"test brackets", `[ -n "$A" ] && echo yes`, []string{"A"}},
		{"test command", `test "$A" = x`, []string{"A"}},
		{"test -v", `[ -v A ]`, []string{"A"}},
		{"double brackets arithmetic", `[[ A -eq 1 ]]`, []string{"A"}},
		{"if condition", "if [ \"$A\" ]; then echo $B; else echo $C; fi", []string{"A", "B", "C"}},
		{"while condition", `while [ "$A" != x ]; do echo $B; done`, []string{"A", "B"}},
		{"case word", `case $A in x) echo $B;; esac`, []string{"A", "B"}},
		{"case pattern", `case x in $A) :;; esac`, []string{"A"}},
		{"for list", `for f in $A b; do echo $f; done`, []string{"A"}},
		{"redirect target", `echo hi > "$A"`, []string{"A"}},
		{"assignment value", `x=$A`, []string{"A"}},
		{"prefix assignment value", `X=$A cmd`, []string{"A"}},
		{"prefix assignment not seen by own args", `X=1 echo $X`, []string{"X"}},
		{"subshell", `(echo $A)`, []string{"A"}},
		{"block", `{ echo $A; }`, []string{"A"}},
		{"background", `sleep 1 & echo $A`, []string{"A"}},
		{"negated", `! grep -q x "$A"`, []string{"A"}},
		{"function body called", "f() { echo $A; }\nf", []string{"A"}},
		{"function never called", "f() { echo $A; }", []string{"A"}},
		{"function reads before caller sets", "f() { echo $A; }\nf\nA=1", []string{"A"}},

		// Code handed to another shell.
		{"sh -c single quoted", `sh -c 'echo $A'`, []string{"A"}},
		{"bash -c", `bash -c 'echo "$A"'`, []string{"A"}},
		{"bash -ec", `bash -ec 'echo $A'`, []string{"A"}},
		{"bash -o pipefail -c", `bash -o pipefail -c 'echo $A'`, []string{"A"}},
		{"absolute sh", `/bin/sh -c 'echo $A'`, []string{"A"}},
		{"sh -c escaped dollar", `sh -c "echo \$A"`, []string{"A"}},
		{"sh -c double quoted reads outer", `sh -c "echo $A"`, []string{"A"}},
		{"sh -c nested", `sh -c 'sh -c "echo \$A"'`, []string{"A"}},
		{"sh -c unexported own name", `X=1; sh -c 'echo $X'`, []string{"X"}},
		{"eval single quoted", `eval 'echo $A'`, []string{"A"}},
		{"eval escaped", `eval "echo \${A}"`, []string{"A"}},
		{"eval built from own value", `x='$A'; eval "echo $x"`, []string{"A"}},
		{"eval joined words", `eval echo '$A'`, []string{"A"}},
		{"command eval", `command eval 'echo $A'`, []string{"A"}},
		{"xargs sh -c", `echo x | xargs sh -c 'echo $A'`, []string{"A"}},
		{"timeout bash -c", `timeout 5 bash -c 'echo $A'`, []string{"A"}},
		{"env sh -c", `env sh -c 'echo $A'`, []string{"A"}},
		{"nohup sh -c", `nohup sh -c 'echo $A' >/dev/null`, []string{"A"}},
		{"find -exec sh -c", `find . -exec sh -c 'echo $A' \;`, []string{"A"}},
		{"find -exec sh -c with argument", `find . -name '*.yaml' -exec sh -c 'wc -l "$1"' _ {} \;`, nil},
		{"sh reading a quoted heredoc", "sh <<'EOF'\necho $A\nEOF", []string{"A"}},
		{"sh reading an unquoted heredoc", "sh <<EOF\necho \\$A\nEOF", []string{"A"}},
		{"trap", `trap 'echo $A' EXIT`, []string{"A"}},
		{"alias", `alias x='echo $A'`, []string{"A"}},
		{"watch", `watch -n 1 'echo $A'`, []string{"A"}},
		{"flock -c", `flock /tmp/l -c 'echo $A'`, []string{"A"}},
		{"function called through eval", "f() { echo $A; }\neval f", []string{"A"}},
		{"trap reads at exit", `trap 'echo $A' EXIT; A2=1`, []string{"A"}},
		{"sh reading /dev/stdin heredoc", "sh /dev/stdin <<'EOF'\necho $A\nEOF", []string{"A"}},
		{"dot /dev/stdin heredoc", ". /dev/stdin <<'EOF'\necho $A\nEOF", []string{"A"}},
		{"builtin eval", `builtin eval 'echo $A'`, []string{"A"}},
		{"arithmetic through own value", `x=A; echo $((x + 1))`, []string{"A"}},
		{"awk ENVIRON", `awk 'BEGIN { print ENVIRON["A"] }'`, []string{"A"}},
		{"jq env", `jq -n 'env.A'`, []string{"A"}},
		{"jq $ENV", `jq -n '$ENV.A, $ENV["B"]'`, []string{"A", "B"}},
		{"perl ENV", `perl -e 'print $ENV{A}'`, []string{"A"}},
		{"python environ", `python3 -c 'import os; print(os.environ["A"], os.getenv("B"))'`, []string{"A", "B"}},
		{"node process.env", `node -e 'console.log(process.env.A)'`, []string{"A"}},
		{"ruby ENV", `ruby -e 'puts ENV["A"]'`, []string{"A"}},
		{"envsubst names", `envsubst '$A ${B}' < tpl`, []string{"A", "B"}},

		// Direct environment reads.
		{"printenv", `printenv A`, []string{"A"}},
		{"printenv two", `printenv A B`, []string{"A", "B"}},
		{"printenv path", `/usr/bin/printenv A`, []string{"A"}},
		{"printenv unexported own", `A=1; printenv A`, []string{"A"}},
		{"printenv own value", `n=A; printenv "$n"`, []string{"A"}},
		{"env then printenv", `env X=1 printenv A`, []string{"A"}},
		{"command chosen by own value", `p=printenv; $p A`, []string{"A"}},
		{"declare -p", `declare -p A`, []string{"A"}},

		// What the step sets itself.
		{"assignment then read", `x=1; echo $x`, nil},
		{"assignment in sequence", `A=1 B=$A; echo $B`, nil},
		{"assignment then &&", `X=$(cat f) && echo "$X"`, nil},
		{"and chain", `cd /tmp && X=$(pwd) && echo "$X"`, nil},
		{"for variable", `for f in a b; do echo $f; done`, nil},
		{"for variable after loop", `for f in a b; do :; done; echo $f`, nil},
		{"read target", `echo x | { read -r line; echo "$line"; }`, nil},
		{"while read", `printf 'a\n' | while read -r l; do echo "$l"; done`, nil},
		{"read default REPLY", `read; echo $REPLY`, nil},
		{"export assigns", `export X=1; echo $X`, nil},
		{"export then child", `export X=1; sh -c 'echo $X'`, nil},
		{"export after assign then child", `X=1; export X; sh -c 'echo $X'`, nil},
		{"prefix to child", `X=1 sh -c 'echo $X'`, nil},
		{"env assign to child", `env X=1 sh -c 'echo $X'`, nil},
		{"set -a exports", `set -a; X=1; sh -c 'echo $X'`, nil},
		{"local", `f() { local x=1; echo $x; }; f`, nil},
		{"readonly", `readonly X=1; echo $X`, nil},
		{"getopts", `while getopts ab opt; do echo $opt $OPTARG; done`, nil},
		{"default assigns after reading", `: ${X:=1}; echo $X`, []string{"X"}},
		{"arith assigns", `: $((i = 0)); echo $((i + 1))`, nil},
		{"eval sets", `eval 'X=1'; echo $X`, nil},
		{"sh -c sets its own", `sh -c 'X=1; echo $X'`, nil},
		{"if both branches set", `if true; then X=1; else X=2; fi; echo $X`, nil},
		{"case with catch-all sets", `case a in a) X=1;; *) X=2;; esac; echo $X`, nil},
		{"function sets before read", "f() { X=1; }\nf\necho $X", nil},
		{"function reads what caller set", "f() { echo $A; }\nA=1\nf", nil},
		{"function sees prefix assignment", "f() { echo $A; }\nA=1 f", nil},

		// What is not a read.
		{"special parameters", `echo $? $$ $# $@ $* $! $- $0 $1 ${10} "$@"`, nil},
		{"shell maintained", `echo $PWD $PPID $LINENO $OPTIND`, nil},
		{"single quotes", `echo '$A'`, nil},
		{"jq single quoted", `kubectl get x -o json | jq -r --arg x y '.items[] | select(.name == $x) | $x'`, nil},
		{"awk", `awk '{print $1, $NF}' file`, nil},
		{"sed", `sed 's/name: demo-database/name: demo-database-broken/'`, nil},
		{"quoted heredoc", "cat <<'EOF'\n$A ${B}\nEOF", nil},
		{"backslash heredoc", "cat <<\\EOF\n$A\nEOF", nil},
		{"double quoted heredoc delimiter", "cat <<\"EOF\"\n$A\nEOF", nil},
		{"escaped dollar", `echo \$A "\$B"`, nil},
		{"kubectl exec remote shell", `kubectl exec deploy/x -- sh -c 'echo $HOSTNAME'`, nil},
		{"sh script file", `sh ./script.sh`, nil},
		{"sh reading a file", `sh < script.sh`, nil},
		{"arithmetic number", `echo $((1 + 2))`, nil},
		{"unset is not a read", `unset A`, nil},
		{"export of env name is not a read", `export A`, nil},
		{"set options", `set -eu; set -o pipefail 2>/dev/null || true`, nil},
		{"comment", "# $A\necho hi", nil},
		{"trap reset", `trap - EXIT`, nil},
		{"command -v", `command -v jq >/dev/null`, nil},
		{"trap sees what the script set later", `trap 'rm -f "$tmp"' EXIT; tmp=$(mktemp)`, nil},
		{"jq field named env", `kubectl get pod x -o json | jq '.spec.containers[0].env, "env"'`, nil},
		{"jq published name", `jq -n '$ENV.NAMESPACE, env.KUBECONFIG'`, []string{"KUBECONFIG", "NAMESPACE"}},
		{"awk field", `awk -v ns="$NAMESPACE" '$1 == ns { print $2 }'`, []string{"NAMESPACE"}},
		{"path built at run time", `"$(git rev-parse --show-toplevel)/demo/bin/lab" manifest x`, nil},
		{"ps without e", `ps -ef`, nil},
		{"script file written then read as data", `echo hi > out.txt; cat out.txt`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			an, err := Analyze(c.src)
			if err != nil {
				t.Fatalf("Analyze(%q): %v", c.src, err)
			}
			got := names(an)
			want := c.want
			if want == nil {
				want = []string{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Analyze(%q) reads %q, want %q", c.src, got, want)
			}
			if len(an.Problems) > 0 {
				t.Errorf("Analyze(%q) has problems %+v, want none", c.src, an.Problems)
			}
		})
	}
}

// TestProblems lists constructs whose reads cannot be known before the
// script runs; each must be reported.
func TestProblems(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"bare env", `env`, "whole environment"},
		{"env with only options", `env -0`, "whole environment"},
		{"env with only assignments", `env X=1`, "whole environment"},
		{"bare printenv", `printenv`, "whole environment"},
		{"printenv piped", `printenv | grep A`, "whole environment"},
		{"bare export", `export`, "whole environment"},
		{"export -p", `export -p`, "whole environment"},
		{"bare set", `set`, "every variable"},
		{"declare bare", `declare`, "whole environment"},
		{"proc environ", `cat /proc/self/environ`, "/proc"},
		{"proc environ redirect", `tr '\0' '\n' < /proc/$$/environ`, "/proc"},
		{"proc environ in sh -c", `sh -c 'cat /proc/1/environ'`, "/proc"},
		{"printenv name from a substitution", `printenv "$(echo A)"`, "chosen at run time"},
		{"xargs printenv", `echo A | xargs printenv`, "chosen at run time"},
		{"xargs env", `echo A | xargs env`, "chosen at run time"},
		{"xargs sh -c without code", `echo 'echo $A' | xargs -0 sh -c`, "built at run time"},
		{"eval of substitution", `eval "$(echo echo \$A)"`, "built at run time"},
		{"eval of computed value", `x=$(printf '$%s' A); eval "echo $x"`, "built at run time"},
		{"sh -c of substitution", `sh -c "$(cat f)"`, "built at run time"},
		{"indirect through eval", `eval "echo \$$NAMESPACE"`, "chosen at run time"},
		{"pipe into sh", `echo 'echo $A' | sh`, "pipes code"},
		{"pipe into bash -s", `printf 'echo $A' | bash -s`, "pipes code"},
		{"env -S", `env -S 'sh -c "echo $A"'`, "env -S"},
		{"sh -c not shell", `sh -c 'echo ${!A}'`, "not POSIX sh"},
		{"eval nesting", `x='eval "$x"'; eval "$x"`, "too deeply"},
		{"eval of an argument", `f() { eval "$1"; }; f 'echo $A'`, "built at run time"},
		{"eval of positional parameters", `set -- 'echo $A'; eval "$@"`, "built at run time"},
		{"eval of a loop variable", `for c in 'echo $A'; do eval "$c"; done`, "built at run time"},
		{"eval of a read line", "read -r c <<'EOF'\necho $A\nEOF\neval \"$c\"", "built at run time"},
		{"xargs -I into code", `echo '$A' | xargs -I{} sh -c 'echo {}'`, "built at run time"},
		{"xargs -I custom into code", `echo '$A' | xargs -I % bash -c 'echo %'`, "built at run time"},
		{"find {} into code", `find . -exec sh -c 'cat {}' \;`, "built at run time"},
		{"computed command name", `$(echo env)`, "name is chosen at run time"},
		{"computed command name from own unknown", `c=$(echo printenv); $c A`, "name is chosen at run time"},
		{"script written then run", "echo 'echo $A' > /tmp/x.sh; sh /tmp/x.sh", "writes itself"},
		{"script written with tee then sourced", "echo 'echo $A' | tee s.sh >/dev/null; . ./s.sh; . s.sh", "writes itself"},
		{"script written then executed", "printf 'echo $A' > run.sh; chmod +x run.sh; ./run.sh", "writes itself"},
		{"pipe into dot stdin", "echo 'echo $A' | . /dev/stdin", "pipes code"},
		{"awk whole ENVIRON", `awk 'BEGIN { for (k in ENVIRON) print k }'`, "chosen at run time"},
		{"jq whole env", `jq -n env`, "chosen at run time"},
		{"jq whole $ENV", `jq -n '$ENV | keys'`, "chosen at run time"},
		{"perl %ENV", `perl -e 'print keys %ENV'`, "chosen at run time"},
		{"python environ dump", `python3 -c 'import os; print(os.environ)'`, "chosen at run time"},
		{"envsubst without names", `envsubst < tpl`, "every name its input mentions"},
		{"compgen", `compgen -e`, "lists variable names"},
		{"ps e", `ps eww $$`, "environment of processes"},
		{"declare -x", `declare -x`, "whole environment"},
		{"command env", `command env`, "whole environment"},
		{"nice env", `nice -n 5 env`, "whole environment"},
		{"env -i only", `env -i`, "whole environment"},
		{"quoted env", `"env"`, "whole environment"},
		{"escaped env", `\env`, "whole environment"},
		{"split env", `e'n'v`, "whole environment"},
		{"alias to env", `alias e=env`, "whole environment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			an, err := Analyze(c.src)
			if err != nil {
				t.Fatalf("Analyze(%q): %v", c.src, err)
			}
			for _, p := range an.Problems {
				if strings.Contains(p.What, c.want) {
					if p.Instead == "" {
						t.Errorf("problem %q says nothing to write instead", p.What)
					}
					return
				}
			}
			t.Errorf("Analyze(%q) problems %+v, want one saying %q", c.src, an.Problems, c.want)
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		`echo ${!A}`,               // indirection is bash
		`echo ${!A*}`,              // names by prefix
		`echo "unterminated`,       // quote
		`if true; then echo`,       // missing fi
		`echo ${A[0]}`,             // arrays are bash
		`echo ${A/x/y}`,            // replacement is bash
		`cat <<< "$A"`,             // here-strings are bash
		`echo $(( A `,              // arithmetic unterminated
		"f() { echo; ",             // body unterminated
		`diff <(echo a) <(echo b)`, // process substitution
	} {
		_, err := Analyze(src)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Analyze(%q) = %v, want a ParseError", src, err)
			continue
		}
		if pe.Line == 0 || pe.Message == "" {
			t.Errorf("Analyze(%q) parse error %+v lacks a position or message", src, pe)
		}
	}
}

func TestReadPositions(t *testing.T) {
	an, err := Analyze("echo ok\n  echo \"$A\"\nsh -c 'echo $B'")
	if err != nil {
		t.Fatal(err)
	}
	want := []Read{
		{Name: "A", Line: 2, Col: 9},
		{Name: "B", Line: 3, Col: 7, Via: "code handed to sh -c"},
	}
	if !reflect.DeepEqual(an.Reads, want) {
		t.Errorf("reads %+v, want %+v", an.Reads, want)
	}
}
