// xterm-render.mjs CAST: plays an asciicast v2 file in @xterm/headless (the
// emulator of xterm.js, which no one here wrote) and prints, as one JSON
// document, what its buffer holds (the scrollback and the screen, each
// line's trailing blanks trimmed) at the end of every step (just before the next step's "m" marker, and at the end of
// the cast for the last). site/xterm_test.go compares it with
// recorder/terminal.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Terminal } = require("@xterm/headless");

const lines = readFileSync(process.argv[2], "utf8").split("\n").filter((l) => l.trim() !== "");
const header = JSON.parse(lines[0]);
if (header.version !== 2) throw new Error(`not asciicast v2: version ${header.version}`);

// Scrollback enough for any published cast (each holds a few thousand lines
// at most), so nothing is dropped that the other emulator keeps.
const term = new Terminal({ cols: header.width, rows: header.height, scrollback: 1_000_000, allowProposedApi: true });

// Writes are parsed asynchronously: the callback of an empty write runs once
// everything written before it has been.
const flushed = () => new Promise((resolve) => term.write("", resolve));

// The buffer as { scrollback, screen }: the lines above the screen (baseY
// of them) and the screen's, trailing blank lines of the screen left out.
function text() {
  const buf = term.buffer.active;
  const lines = [];
  // translateToString(true) trims the cells never written; spaces written
  // at a line's end are trimmed too, as recorder/terminal trims them.
  for (let i = 0; i < buf.length; i++) lines.push(buf.getLine(i).translateToString(true).replace(/ +$/, ""));
  const screen = lines.slice(buf.baseY);
  while (screen.length > 0 && screen[screen.length - 1] === "") screen.pop();
  return { scrollback: lines.slice(0, buf.baseY), screen };
}

const steps = [];
let markers = 0;
for (const line of lines.slice(1)) {
  const [, code, data] = JSON.parse(line);
  if (code === "m") {
    if (markers > 0) {
      await flushed();
      steps.push(text());
    }
    markers++;
  } else if (code === "o") {
    term.write(data);
  }
}
await flushed();
steps.push(text());
process.stdout.write(JSON.stringify({ markers, steps }) + "\n");
