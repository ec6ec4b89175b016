package site

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"ptah.run/operator/recorder/terminal"
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
	var text strings.Builder
	for _, e := range events {
		text.WriteString(e.Data)
	}
	width, height := max(h.Width, 20), max(h.Height, 5)
	var rows [][]terminal.Cell
	for _, r := range terminal.Rows(text.String()) {
		l := r.Cells
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
		// Each run of non-blank characters in one style is placed at its
		// own column, so the screen's spacing holds whatever the viewer
		// does with blanks.
		fmt.Fprintf(&b, `<text y="%.0f">`, float64(padding)+float64(i+1)*cellHeight-4)
		for col := 0; col < len(row); {
			st := row[col].Style
			if row[col].Text == " " {
				col++
				continue
			}
			end := col + 1
			for end < len(row) && row[end].Text != " " && row[end].Style == st {
				end++
			}
			fmt.Fprintf(&b, `<tspan x="%.2f"`, padding+float64(col)*cellWidth)
			if n, ok := st.Fg.Index(); ok {
				fmt.Fprintf(&b, ` fill="%s"`, palette[n])
			} else if st.Dim {
				fmt.Fprintf(&b, ` fill="%s"`, posterDim)
			}
			if st.Bold {
				b.WriteString(` font-weight="bold"`)
			}
			if st.Underline {
				b.WriteString(` text-decoration="underline"`)
			}
			b.WriteString(">")
			for _, c := range row[col:end] {
				xml.EscapeText(&b, []byte(c.Text))
			}
			b.WriteString("</tspan>")
			col = end
		}
		b.WriteString("</text>\n")
	}
	b.WriteString("</g>\n</svg>\n")
	return b.Bytes()
}
