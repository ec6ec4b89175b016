package site

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// TestCastsPlayInAsciinema plays every published cast with Debian's
// asciinema (a player this project did not write) and requires the screen
// it prints to be the page's transcript, so a reader's own player shows the
// same session as the page.
func TestCastsPlayInAsciinema(t *testing.T) {
	player, err := exec.LookPath("asciinema")
	if err != nil {
		t.Fatal("no asciinema on PATH: install Debian's asciinema (make host-deps)")
	}
	sites := map[string]func(*testing.T) (string, *Site, string){"fixture": builtSite}
	if _, err := os.Stat(filepath.Join("..", "demo", "recordings", "runs.json")); err == nil {
		sites["committed recording"] = committedSite
	}
	for name, built := range sites {
		t.Run(name, func(t *testing.T) {
			out, s, _ := built(t)
			for _, p := range s.Pages {
				screen := asciinemaCat(t, player, filepath.Join(out, filepath.FromSlash(p.CastHref())))
				if diff := agree(screen, p); diff != "" {
					t.Errorf("%s: asciinema cat differs from the page's transcript: %s", p.ID, diff)
				}
			}
		})
	}
}

// asciinemaCat runs `asciinema cat CAST` on a terminal of its own (it reads
// /dev/tty) and returns what it printed.
func asciinemaCat(t *testing.T, player, cast string) string {
	t.Helper()
	cmd := exec.Command(player, "cat", cast)
	cmd.Env = append(os.Environ(), "TERM=xterm", "HOME="+t.TempDir())
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		t.Fatalf("asciinema cat %s: %v", cast, err)
	}
	var buf bytes.Buffer
	_, err = io.Copy(&buf, tty)
	// Reading the terminal ends with EIO once asciinema exits.
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("read asciinema's terminal: %v", err)
	}
	tty.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("asciinema cat %s: %v: %s", cast, err, buf.String())
	}
	return buf.String()
}
