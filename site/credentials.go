package site

import (
	"fmt"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"ptah.run/operator/recorder/labenv"
	"ptah.run/operator/recorder/recording"
)

// refuseCredentials walks root and refuses the first file that holds one of
// the lab's credential values, naming the file (as under shownAs) and the
// credential file the value came from, never the value. A page or a poster
// is also read with its character references decoded, since both escape
// what they print.
func refuseCredentials(secrets []labenv.Secret, root, shownAs string) error {
	if len(secrets) == 0 {
		return nil
	}
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
		if err := recording.ScanText(secrets, where, text); err != nil {
			return err
		}
		if strings.HasSuffix(path, ".html") || strings.HasSuffix(path, ".svg") {
			return recording.ScanText(secrets, where, html.UnescapeString(text))
		}
		return nil
	})
}
