package site

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// credentials are the values the lab generated as secrets. Each line of a
// credentials file is a value, or NAME=VALUE (optionally quoted, as a shell
// reads it); a directory stands for every file in it.
type credentials struct {
	values []string
}

func readCredentials(paths []string) (credentials, error) {
	var c credentials
	for _, p := range paths {
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			return c.readFile(path)
		})
		if err != nil {
			return c, fmt.Errorf("read the lab's credentials at %s: %w", p, err)
		}
	}
	return c, nil
}

func (c *credentials) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, value, ok := strings.Cut(line, "="); ok && isEnvName(strings.TrimPrefix(name, "export ")) {
			line = value
		}
		if u, err := strconv.Unquote(line); err == nil {
			line = u
		} else if len(line) >= 2 && line[0] == '\'' && line[len(line)-1] == '\'' {
			line = line[1 : len(line)-1]
		}
		if line != "" {
			c.values = append(c.values, line)
		}
	}
	return sc.Err()
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// forms are the ways a value can appear in what the site publishes: as
// written, HTML-escaped, JSON-escaped and URL-escaped.
func forms(v string) []string {
	j, _ := json.Marshal(v)
	return []string{v, html.EscapeString(v), string(j[1 : len(j)-1]), url.QueryEscape(v), url.PathEscape(v)}
}

// refuse walks root and names every file that contains a credential value,
// never the value itself; files are named as under shownAs.
func (c credentials) refuse(root, shownAs string) error {
	if len(c.values) == 0 {
		return nil
	}
	var leaks []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if c.containedIn(data) {
			rel, _ := filepath.Rel(root, path)
			leaks = append(leaks, filepath.Join(shownAs, rel))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("look for credentials in %s: %w", root, err)
	}
	if len(leaks) > 0 {
		return fmt.Errorf("refused: %s would publish a credential value the lab generated; find where the recording carries it and record again", strings.Join(leaks, ", "))
	}
	return nil
}

func (c credentials) containedIn(data []byte) bool {
	for _, v := range c.values {
		for _, f := range forms(v) {
			if bytes.Contains(data, []byte(f)) {
				return true
			}
		}
	}
	return false
}
