package credential

import (
	"strings"

	"ptah.run/operator/recorder/terminal"
)

// asPlayed names the view of a cast as a player shows it.
const asPlayed = "as a player shows the cast"

// ScanSession replays chunks (everything a cast writes, in order) in one
// terminal of width by height, as a player does, across step boundaries,
// and returns the first credential any screen shows with how many chunks
// had been written when it showed, or nil.
//
// Every screen state at a chunk boundary is scanned: a state the next
// chunk only adds to (text written after the last, lines scrolled off the
// top) is scanned within the text that follows it, the lines scrolled off
// and the final screen scanned as one; a state the next chunk takes
// anything from (an overwrite, an erase, a deletion, the alternate screen)
// is scanned then, with the lines above it. Lines scrolled off are kept
// ScrollbackLines at a time: a longer session is scanned a window at a
// time, each window holding a screenful of the one before. (One chunk that
// scrolls more than ScrollbackLines lines loses the oldest of them to the
// emulator's cap; its bytes are scanned as written all the same.)
func (s *Scanner) ScanSession(width, height int, chunks []string) (int, *Finding) {
	if s.session(width, height, chunks) == nil {
		return 0, nil
	}
	// The first prefix of the session that shows it: when it showed.
	lo, hi := 1, len(chunks)
	for lo < hi {
		mid := (lo + hi) / 2
		if s.session(width, height, chunks[:mid]) != nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, s.session(width, height, chunks[:lo])
}

func (s *Scanner) session(width, height int, chunks []string) *Finding {
	scr := terminal.NewScreen(width, height)
	defer scr.Close()
	var above []string // lines scrolled off the top, not yet scanned
	shown := ""
	look := func(lines []string, screen string) *Finding {
		text := strings.Join(append(lines[:len(lines):len(lines)], screen), "\n")
		return s.scan([]view{newView(asPlayed, []byte(text))}, len(text))
	}
	for _, c := range chunks {
		scr.Write(terminal.ValidUTF8(c))
		scrolled := scr.Scrolled()
		now := scr.Shown()
		after := strings.Join(append(scrolled[:len(scrolled):len(scrolled)], now), "\n")
		if !strings.HasPrefix(after, shown) {
			if f := look(above[max(0, len(above)-height):], shown); f != nil {
				return f
			}
		}
		above = append(above, scrolled...)
		if len(above) > terminal.ScrollbackLines {
			if f := look(above, ""); f != nil {
				return f
			}
			above = append([]string(nil), above[len(above)-height:]...)
		}
		shown = now
	}
	return look(above, shown)
}
