package database

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"ptah.run/operator/operator/report"
)

func TestOpenErrorsNameOnlyHostAndPort(t *testing.T) {
	cases := []struct {
		url  string
		code report.Code
		want string
	}{
		{"postgres://alice:s3cret-pw@127.0.0.1:1/appdb?sslmode=disable", report.Connection, "127.0.0.1:1"},
		{"postgres://alice:s3cret-pw@host.invalid:5432/appdb?connect_timeout=2", report.Connection, "host.invalid:5432"},
		{"postgres://alice:s3cret-pw@127.0.0.1:notaport/appdb", report.Usage, "malformed"},
		{"", report.Usage, URLEnv},
	}
	for _, c := range cases {
		_, err := Open(context.Background(), c.url, 2*time.Second)
		var e *report.Error
		if !errors.As(err, &e) || e.Code != c.code {
			t.Errorf("%s: want %s, got %v", c.url, c.code, err)
			continue
		}
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: message %q does not name %s", c.url, e.Message, c.want)
		}
		for _, secret := range []string{"alice", "s3cret-pw", "appdb"} {
			if strings.Contains(e.Message, secret) {
				t.Errorf("%s: message %q holds %q", c.url, e.Message, secret)
			}
		}
	}
}
