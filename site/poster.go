package site

import (
	"bytes"
	"encoding/xml"
	"fmt"
)

// Poster geometry: a character cell of the DejaVu Sans Mono the poster asks
// for at 14px, and the frame around the screen.
const (
	cellWidth  = 8.43
	cellHeight = 17
	padding    = 12
)

// palette is each terminal colour as site.css draws it on the terminal's
// background; the poster draws the same.
var palette = [16]string{
	"#9ba3b4", "#ff8a80", "#7fd88f", "#f2d16b", "#8ab4ff", "#e39bf2", "#6fd6e0", "#e4e6eb",
	"#aab2c2", "#ffaaa0", "#a3e8ae", "#f8e08e", "#adc9ff", "#efbaf7", "#9ce6ee", "#ffffff",
}

const (
	posterBackground = "#15171c"
	posterInk        = "#e4e6eb"
	posterDim        = "#9ba3b4"
)

// poster draws the cast's final screen (its last rows, wrapped at its
// width as the terminal wrapped them) as a static SVG, for READMEs and link
// previews. Text is escaped; nothing but the recorded bytes is drawn.
func poster(title string, h castHeader, events []castEvent) []byte {
	var s screen
	for _, e := range events {
		s.feed(e.Data)
	}
	width, height := max(h.Width, 20), max(h.Height, 5)
	var rows [][]cell
	for _, l := range s.finish() {
		l = expandTabs(l)
		if len(l) == 0 {
			rows = append(rows, nil)
		}
		for len(l) > 0 {
			n := min(width, len(l))
			rows = append(rows, l[:n])
			l = l[n:]
		}
	}
	if len(rows) > height {
		rows = rows[len(rows)-height:]
	}
	w := float64(width)*cellWidth + 2*padding
	ht := float64(height)*cellHeight + 2*padding
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="title">`+"\n", w, ht, w, ht)
	b.WriteString(`<title id="title">`)
	xml.EscapeText(&b, []byte("The final screen of the recorded session: "+title))
	b.WriteString("</title>\n")
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" rx="8" fill="%s"/>`+"\n", posterBackground)
	fmt.Fprintf(&b, `<g font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14" fill="%s">`+"\n", posterInk)
	for i, row := range rows {
		if len(row) == 0 {
			continue
		}
		// Each run of non-blank characters is placed at its own column, so
		// the screen's spacing holds whatever the viewer does with blanks.
		fmt.Fprintf(&b, `<text y="%.0f">`, float64(padding)+float64(i+1)*cellHeight-4)
		col := 0
		for _, seg := range segmentsOf(row) {
			for _, word := range words(seg.text) {
				fmt.Fprintf(&b, `<tspan x="%.2f"`, padding+float64(col+word.col)*cellWidth)
				if seg.st.fg > 0 {
					fmt.Fprintf(&b, ` fill="%s"`, palette[seg.st.fg-1])
				} else if seg.st.dim {
					fmt.Fprintf(&b, ` fill="%s"`, posterDim)
				}
				if seg.st.bold {
					b.WriteString(` font-weight="bold"`)
				}
				if seg.st.underline {
					b.WriteString(` text-decoration="underline"`)
				}
				b.WriteString(">")
				xml.EscapeText(&b, []byte(word.text))
				b.WriteString("</tspan>")
			}
			col += len([]rune(seg.text))
		}
		b.WriteString("</text>\n")
	}
	b.WriteString("</g>\n</svg>\n")
	return b.Bytes()
}

type styledRun struct {
	st   style
	text string
}

func segmentsOf(cells []cell) []styledRun {
	var out []styledRun
	for _, c := range cells {
		if n := len(out); n > 0 && out[n-1].st == c.st {
			out[n-1].text += string(c.r)
			continue
		}
		out = append(out, styledRun{c.st, string(c.r)})
	}
	return out
}

// expandTabs puts tabs at every eighth column, as the terminal does.
func expandTabs(l []cell) []cell {
	var out []cell
	for _, c := range l {
		if c.r != '\t' {
			out = append(out, c)
			continue
		}
		c.r = ' '
		out = append(out, c)
		for len(out)%8 != 0 {
			out = append(out, c)
		}
	}
	return out
}

type word struct {
	col  int
	text string
}

// words splits text at blanks, keeping each word's column.
func words(text string) []word {
	var out []word
	start := -1
	runes := []rune(text)
	for i := 0; i <= len(runes); i++ {
		blank := i == len(runes) || runes[i] == ' '
		switch {
		case !blank && start < 0:
			start = i
		case blank && start >= 0:
			out = append(out, word{start, string(runes[start:i])})
			start = -1
		}
	}
	return out
}
