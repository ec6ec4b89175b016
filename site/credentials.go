package site

import (
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ptah.run/operator/recorder/credential"
	"ptah.run/operator/recorder/recording"
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
// never the value. A page is also read with its character references
// decoded, since the templates escape what they print.
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
		if err := recording.ScanText(sc, where, text); err != nil {
			return err
		}
		if strings.HasSuffix(path, ".html") {
			return recording.ScanText(sc, where, html.UnescapeString(text))
		}
		return nil
	})
}
