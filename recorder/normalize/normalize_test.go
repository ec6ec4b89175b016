package normalize

import "testing"

func TestRules(t *testing.T) {
	n := Normalizer{RunID: "k7q2x9"}
	cases := []struct{ name, in, want string }{
		{"uid", `uid: 3f1c2b0e-9d4a-4e7b-8c21-5a6b7c8d9e0f`, `uid: ` + UID},
		{"uid upper case is not an API uid", `X: 3F1C2B0E-9D4A-4E7B-8C21-5A6B7C8D9E0F`, `X: 3F1C2B0E-9D4A-4E7B-8C21-5A6B7C8D9E0F`},
		{"timestamp Z", `"lastTransitionTime":"2026-09-17T10:11:12Z"`, `"lastTransitionTime":"` + Timestamp + `"`},
		{"timestamp offset", `at 2026-09-17T12:11:12+02:00 done`, `at ` + Timestamp + ` done`},
		{"timestamp fraction", `2026-09-17T10:11:12.123456Z`, Timestamp},
		{"run id in names", `namespace/demo-k7q2x9 created, ptah-lab-k7q2x9.local`, `namespace/demo-run created, ptah-lab-run.local`},
		{"run id inside a word is not a name", `xk7q2x9 k7q2x9y`, `xk7q2x9 k7q2x9y`},
		{"padded column shorter replacement", "demo-k7q2x9   Active   5s", "demo-run      Active   5s"},
		{"padded column longer replacement", "2026-09-17T10:11:12.1+02:00    Warning", Timestamp + "           Warning"[:len("2026-09-17T10:11:12.1+02:00    ")-len(Timestamp)] + "Warning"},
		{"single space is not a column", "demo-k7q2x9 Active", "demo-run Active"},
		{"digest untouched", `sha256:81dabcf8d2a725da080ba4e18858d7cdcfd5559b6c869f5a045a6a0e37461234`, `sha256:81dabcf8d2a725da080ba4e18858d7cdcfd5559b6c869f5a045a6a0e37461234`},
		{"run id shaped hex inside a digest untouched", `sha256:00k7q2x900`, `sha256:00k7q2x900`},
		{"job name hash untouched", `ptah-observe-storefront-e4d00056326601d7`, `ptah-observe-storefront-e4d00056326601d7`},
		{"fingerprint and binding id untouched", `"executionBindingID":"v1-b50602bd8c7b04187031ee43aee0f6eb"`, `"executionBindingID":"v1-b50602bd8c7b04187031ee43aee0f6eb"`},
		{"reasons and plan text untouched", `Warning OperationFailed ALTER TABLE customers ADD COLUMN email text`, `Warning OperationFailed ALTER TABLE customers ADD COLUMN email text`},
		{"date without time untouched", `Recorded 2026-09-17`, `Recorded 2026-09-17`},
	}
	for _, c := range cases {
		if got := n.Line(c.in); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestPaddedColumnKeepsWidth(t *testing.T) {
	n := Normalizer{RunID: "k7q2x9"}
	in := "NAME          STATUS   AGE\ndemo-k7q2x9   Active   5s\n"
	got := n.Text(in)
	want := "NAME          STATUS   AGE\ndemo-run      Active   5s\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWithoutRunIDOnlyFixedRules(t *testing.T) {
	in := "demo-k7q2x9 3f1c2b0e-9d4a-4e7b-8c21-5a6b7c8d9e0f"
	if got := (Normalizer{}).Line(in); got != "demo-k7q2x9 "+UID {
		t.Errorf("got %q", got)
	}
}

func TestOrderOfLinesIsKept(t *testing.T) {
	in := "b 2026-09-17T10:11:12Z\na 2026-09-17T10:11:11Z\n"
	want := "b " + Timestamp + "\na " + Timestamp + "\n"
	if got := (Normalizer{}).Text(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestLongerReplacementTakesFromPadding(t *testing.T) {
	n := Normalizer{RunID: "q1"}
	cases := map[string]string{
		"demo-q1   Active": "demo-run  Active",
		"demo-q1  Active":  "demo-run Active",
	}
	for in, want := range cases {
		if got := n.Line(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// A scenario run in its own namespace, database and role publishes the
// names a serial run would, and a kubectl table keeps its columns.
func TestScenarioNamesMapBack(t *testing.T) {
	n := Normalizer{RunID: "k7q2x9", Names: []Name{
		{Own: "ptah-demo-3f9a1c", Published: "ptah-demo"},
		{Own: "storefront_3f9a1c", Published: "storefront"},
		{Own: "storefront_app_3f9a1c", Published: "storefront_app"},
	}}
	cases := []struct{ name, in, want string }{
		{"namespace in a kubectl table keeps the columns",
			"NAMESPACE          NAME         AGE\nptah-demo-3f9a1c   storefront   5s\n",
			"NAMESPACE          NAME         AGE\nptah-demo          storefront   5s\n"},
		{"namespace in a host name", `dial tcp: lookup postgres-absent.ptah-demo-3f9a1c.svc: no such host`, `dial tcp: lookup postgres-absent.ptah-demo.svc: no such host`},
		{"role, not taken for the database's prefix", ` public | customers | table | storefront_app_3f9a1c`, ` public | customers | table | storefront_app`},
		{"database", `You are connected to database "storefront_3f9a1c" as user "storefront_app_3f9a1c"`, `You are connected to database "storefront" as user "storefront_app"`},
		{"the published names untouched", `ptah-demo storefront storefront_app`, `ptah-demo storefront storefront_app`},
		{"run id rule still applies", `ptah-lab-k7q2x9 in ptah-demo-3f9a1c`, `ptah-lab-run in ptah-demo`},
	}
	for _, c := range cases {
		got := n.Text(c.in)
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if l := n.Leftover(got); l != "" {
			t.Errorf("%s: %q left in %q", c.name, l, got)
		}
	}
}

// A scenario's own name glued to a longer word is not a name the rules may
// rewrite, so it stays; Leftover finds it and the line is refused.
func TestScenarioNameLeftOverIsFound(t *testing.T) {
	n := Normalizer{Names: []Name{{Own: "ptah-demo-3f9a1c", Published: "ptah-demo"}, {Own: "storefront_app_3f9a1c", Published: "storefront_app"}}}
	for _, in := range []string{"xptah-demo-3f9a1c", "ptah-demo-3f9a1c0", "storefront_app_3f9a1cz owns it", "cHRhaC1kZW1v ptah-demo-3f9a1c_x"} {
		got := n.Line(in)
		if l := n.Leftover(got); l == "" {
			t.Errorf("%q normalized to %q: no leftover found", in, got)
		}
	}
	if l := n.Leftover("ptah-demo storefront_app"); l != "" {
		t.Errorf("the published names reported as leftover %q", l)
	}
}
