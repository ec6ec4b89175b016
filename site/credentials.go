package site

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/net/html"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/terminal"
)

// scanner looks for the lab's credential values, those in opts.Credentials,
// and the shapes of credentials no one listed.
func scanner(opts Options) *credential.Scanner {
	set := credential.NewSet()
	for _, s := range opts.Secrets {
		set.AddValue(s.Value, "a credential the lab generated ("+s.From+")")
	}
	creds := append(set.Credentials(), opts.Credentials...)
	return credential.NewScanner(creds)
}

// refuseCredentials walks root and refuses the first file that holds a
// credential, naming the file (as under shownAs) and what the credential is,
// never the value. A page or a poster is also read with its character
// references decoded, since both escape what they print, and as the text it
// shows, since both draw each style in its own element and a value written
// across colour changes is in no one of them. A cast is also read as the
// output it plays, its escapes decoded from JSON, and replayed from its
// start to its end in one terminal of its size, as a player shows it.
func refuseCredentials(sc *credential.Scanner, root, shownAs string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("look for credentials in %s: %w", path, err)
		}
		rel, _ := filepath.Rel(root, path)
		where := filepath.Join(shownAs, rel)
		text := string(data)
		if err := sc.Refuse(where, []byte(text)); err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".html", ".svg":
			if err := sc.Refuse(where, []byte(html.UnescapeString(text))); err != nil {
				return err
			}
			return sc.Refuse(where, []byte(shownText(data)))
		case ".cast":
			// A cast that cannot be read is refused when the site is
			// built from it; what could be read is scanned here.
			out, _ := castOutput(data)
			if err := sc.Refuse(where, []byte(out)); err != nil {
				return err
			}
			return refuseReplayed(sc, where, data)
		}
		return nil
	})
}

// shownText is the text a page or a poster shows: the text of every
// element, run together, character references decoded.
func shownText(data []byte) string {
	z := html.NewTokenizer(bytes.NewReader(data))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}

// refuseReplayed refuses a cast whose replay shows a credential on any
// screen, naming when.
func refuseReplayed(sc *credential.Scanner, where string, data []byte) error {
	h, events, _ := readCast(data)
	chunks := make([]string, len(events))
	for i, e := range events {
		chunks[i] = e.Data
	}
	w, ht := h.Width, h.Height
	if w <= 0 || ht <= 0 {
		w, ht = terminal.Width, terminal.Height
	}
	n, f := sc.ScanSession(w, ht, chunks)
	if f == nil {
		return nil
	}
	return &credential.Refusal{Where: fmt.Sprintf("%s at %.6f s", where, events[n-1].At), Found: *f}
}
