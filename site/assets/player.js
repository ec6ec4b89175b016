// The replay player: it types out the session the transcript holds, step by
// step, in a terminal frame, with the step's sync phase shown beside it. It
// reads the session from the transcript's own markup, so what it plays and
// what the page prints are one thing. Typing rate and the longest pause come
// from the frame's data attributes, or ?cps= and ?idle= in the address.
(function () {
  "use strict";
  var frame = document.querySelector("figure.replay");
  if (!frame) {
    return;
  }
  var query = new URLSearchParams(window.location.search);
  function setting(name, fallback) {
    var raw = query.has(name) ? query.get(name) : frame.dataset[name];
    var value = parseFloat(raw);
    return isFinite(value) && value >= 0 ? value : fallback;
  }
  var cps = setting("cps", 40); // characters typed per second; 0 types at once
  var idle = setting("idle", 1.5); // longest wait between output lines, in seconds

  var button = frame.querySelector("button.play");
  var phase = frame.querySelector(".phase");
  var progress = frame.querySelector(".progress");
  var transcript = frame.querySelector(".transcript");
  var steps = Array.prototype.map.call(transcript.querySelectorAll(".step"), function (el) {
    return {
      sync: el.dataset.sync || "",
      note: el.querySelector(".note").textContent,
      command: el.querySelector(".command").textContent,
      lines: Array.prototype.map.call(el.querySelectorAll(".output .line"), function (line) {
        return { at: parseFloat(line.dataset.at) || 0, text: line.textContent, className: line.className };
      })
    };
  });

  var terminal = document.createElement("pre");
  terminal.className = "terminal";
  terminal.hidden = true;
  frame.appendChild(terminal);

  var playing = 0; // bumped by every Play and Stop, so a stale run gives up

  function sleep(seconds) {
    return new Promise(function (resolve) { setTimeout(resolve, seconds * 1000); });
  }

  function scroll() {
    terminal.scrollTop = terminal.scrollHeight;
  }

  async function type(text, className, run) {
    var span = document.createElement("span");
    span.className = className;
    terminal.appendChild(span);
    if (cps === 0) {
      span.textContent = text + "\n";
      scroll();
      return;
    }
    var start = performance.now();
    for (;;) {
      if (run !== playing) {
        return;
      }
      var shown = Math.min(text.length, Math.floor((performance.now() - start) / 1000 * cps) + 1);
      span.textContent = text.slice(0, shown);
      scroll();
      if (shown >= text.length) {
        break;
      }
      await sleep(1 / 60);
    }
    span.textContent = text + "\n";
  }

  function show(step) {
    phase.hidden = step.sync === "";
    phase.textContent = step.sync;
    phase.dataset.phase = step.sync;
  }

  async function play(run) {
    for (var i = 0; i < steps.length; i++) {
      var step = steps[i];
      show(step);
      progress.textContent = "step " + (i + 1) + " of " + steps.length;
      if (i > 0) {
        terminal.appendChild(document.createTextNode("\n"));
      }
      await type(step.note, "note", run);
      await type(step.command, "command", run);
      var previous = 0;
      for (var j = 0; j < step.lines.length; j++) {
        if (run !== playing) {
          return;
        }
        var line = step.lines[j];
        var wait = Math.min(Math.max(line.at - previous, 0), idle);
        previous = line.at;
        if (wait > 0) {
          await sleep(wait);
        }
        var span = document.createElement("span");
        span.className = line.className;
        span.textContent = line.text + "\n";
        terminal.appendChild(span);
        scroll();
      }
      if (run !== playing) {
        return;
      }
      await sleep(Math.min(idle, 0.8));
    }
    if (run === playing) {
      frame.dataset.state = "done";
      button.textContent = "Play again";
    }
  }

  button.addEventListener("click", function () {
    playing++;
    if (frame.dataset.state === "playing") {
      frame.dataset.state = "stopped";
      button.textContent = "Play";
      terminal.hidden = true;
      transcript.hidden = false;
      phase.hidden = true;
      progress.textContent = "";
      return;
    }
    frame.dataset.state = "playing";
    button.textContent = "Stop";
    terminal.textContent = "";
    transcript.hidden = true;
    terminal.hidden = false;
    play(playing);
  });
  button.hidden = false;
  frame.dataset.state = "ready";
})();
