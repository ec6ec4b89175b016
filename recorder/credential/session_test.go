package credential

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"ptah.run/operator/recorder/terminal"
)

const castWidth, castHeight = 100, 30

// tricks builds chunks that put secret on one row of the screen in pieces,
// by the means players implement and a line model does not, with writes
// to other rows between them.
func tricks(t *rapid.T, secret string) []string {
	row := rapid.IntRange(1, 10).Draw(t, "row")
	col := rapid.IntRange(1, castWidth-len(secret)).Draw(t, "col")
	at := func(r, c int) string { return fmt.Sprintf("\x1b[%d;%dH", r, c) }
	junk := func() string {
		return at(rapid.IntRange(15, castHeight).Draw(t, "junk row"), 1) + rapid.StringMatching(`[a-z ]{0,30}`).Draw(t, "junk") + "\r\n"
	}
	colour := func(s string) string {
		if rapid.Bool().Draw(t, "colour") {
			return fmt.Sprintf("\x1b[3%dm%s\x1b[0m", rapid.IntRange(0, 7).Draw(t, "fg"), s)
		}
		return s
	}
	// Cut points, so every piece holds at least one character.
	n := rapid.IntRange(1, min(5, len(secret))).Draw(t, "pieces")
	cuts := []int{0}
	for i := 1; i < n; i++ {
		cuts = append(cuts, rapid.IntRange(cuts[i-1]+1, len(secret)-(n-i)).Draw(t, "cut"))
	}
	cuts = append(cuts, len(secret))
	var out []string
	alt := rapid.Bool().Draw(t, "alternate screen")
	if alt {
		out = append(out, "\x1b[?1049h")
	}
	if rapid.Bool().Draw(t, "insert") {
		// Right to left, each piece inserted before the ones written.
		for i := n - 1; i >= 0; i-- {
			p := secret[cuts[i]:cuts[i+1]]
			out = append(out, at(row, col)+fmt.Sprintf("\x1b[%d@", len(p))+colour(p), junk())
		}
	} else {
		for _, i := range rapid.Permutation(rangeN(n)).Draw(t, "order") {
			p := secret[cuts[i]:cuts[i+1]]
			c := col + cuts[i]
			switch rapid.IntRange(0, 3).Draw(t, "trick") {
			case 0: // straight there
				out = append(out, at(row, c)+colour(p))
			case 1: // the cursor saved there, restored later
				out = append(out, at(row, c)+"\x1b7", junk(), "\x1b8"+colour(p))
			case 2:
				out = append(out, at(row, c)+"\x1b[s", junk(), "\x1b[u"+colour(p))
			case 3: // something else there first, overwritten
				out = append(out, at(row, c)+strings.Repeat("#", len(p)), junk(), at(row, c)+colour(p))
			}
			out = append(out, junk())
		}
	}
	switch rapid.IntRange(0, 2).Draw(t, "end") {
	case 1:
		out = append(out, "\x1b[2J")
	case 2:
		out = append(out, strings.Repeat("scrolled\r\n", castHeight+5))
	}
	if alt {
		out = append(out, "\x1b[?1049l")
	}
	return out
}

func rangeN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// firstShown is how many chunks a player has replayed when a screen first
// shows secret on one row, or 0: the oracle, the emulator's own screen.
func firstShown(chunks []string, secret string) int {
	s := terminal.NewScreen(castWidth, castHeight)
	defer s.Close()
	for i, c := range chunks {
		s.Write(c)
		if strings.Contains(s.Shown(), secret) {
			return i + 1
		}
	}
	return 0
}

// TestRandomTricksAreRefused: a random secret put on the screen in random
// pieces by random tricks is refused whenever the emulator's screen shows
// it whole, and no later than the chunk it showed after.
func TestRandomTricksAreRefused(t *testing.T) {
	cases, shown := 0, 0
	start := time.Now()
	rapid.Check(t, func(t *rapid.T) {
		secret := rapid.StringMatching(`[A-Za-z0-9]{10,24}`).Draw(t, "secret")
		chunks := tricks(t, secret)
		cases++
		first := firstShown(chunks, secret)
		if first == 0 {
			return
		}
		shown++
		sc := NewScanner([]Credential{{Value: []byte(secret), Kind: "a random secret"}})
		n, f := sc.ScanSession(castWidth, castHeight, chunks)
		if f == nil {
			t.Fatalf("shown after chunk %d of %q, not refused", first, chunks)
		}
		if n > first || f.Kind != "a random secret" || !strings.HasSuffix(f.Form, asPlayed) {
			t.Fatalf("refused after chunk %d as %v; shown after chunk %d", n, f, first)
		}
	})
	t.Logf("%d cases, %d showed the secret, in %.1f s", cases, shown, time.Since(start).Seconds())
	if shown < cases/2 {
		t.Errorf("only %d of %d cases showed the secret: the generator tests little", shown, cases)
	}
}

// TestSessionWithoutTheSecretIsNotRefused: the pieces alone, never on one
// row together, are no finding.
func TestSessionWithoutTheSecretIsNotRefused(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	chunks := []string{"\x1b[1;1H" + password[:8], "\x1b[1;1H\x1b[2K", "\x1b[1;9H" + password[8:]}
	if n, f := sc.ScanSession(castWidth, castHeight, chunks); f != nil {
		t.Errorf("refused after chunk %d: %v", n, f)
	}
}

// TestLongSessionsAreScannedPastTheScrollback: more lines than the
// scrollback keeps, the value among the first.
func TestLongSessionsAreScannedPastTheScrollback(t *testing.T) {
	sc := NewScanner([]Credential{{Value: []byte(password), Kind: "the planted password"}})
	chunks := []string{"hun" + password[3:] + "\r\n"}
	for range terminal.ScrollbackLines/100 + 5 {
		chunks = append(chunks, strings.Repeat("line\r\n", 100))
	}
	if n, f := sc.ScanSession(castWidth, castHeight, chunks); f == nil || n != 1 {
		t.Errorf("ScanSession = %d, %v; want a refusal after the first chunk", n, f)
	}
	chunks[0] = "no secret\r\n"
	chunks = append(chunks, "\x1b[1A"+password)
	if n, f := sc.ScanSession(castWidth, castHeight, chunks); f == nil || n != len(chunks) {
		t.Errorf("ScanSession = %d, %v; want a refusal after the last chunk", n, f)
	}
}
